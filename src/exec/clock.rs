//! The time as checkpoints, journals and lock records write it: RFC 3339 in seconds, UTC.

use std::time::SystemTime;

/// RFC 3339 time now, in seconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
