//! The crash hook, for tests only: it kills netctl with SIGKILL at a chosen step, so the tests can
//! prove what a resume finds after a real crash (a step caught mid-way, a checkpoint that says
//! `running`, a lock left to expire). Not a user feature; read once from the environment by the
//! command, fired by the upgrade run around each step's action.

use crate::config::Environment;

/// The environment variable of the crash hook, for tests only: `<step-id>:<before|after>` makes the
/// process kill itself with SIGKILL just before the step's action runs (after the checkpoint marked it
/// running) or just after it ran (before the checkpoint records it). Not a user feature.
pub const CRASH_HOOK_VARIABLE: &str = "NETCTL_TEST_CRASH_AFTER";

/// When the crash hook fires, relative to a step's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashWhen {
    Before,
    After,
}

/// The crash hook's variable holds something else than `<step-id>:<before|after>`.
#[derive(Debug, thiserror::Error)]
#[error("invalid `{CRASH_HOOK_VARIABLE}` value `{value}`: expected `<step-id>:<before|after>`")]
pub struct InvalidCrashHook {
    pub value: String,
}

/// A test-only kill point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashPoint {
    pub step: String,
    pub when: CrashWhen,
}

impl CrashPoint {
    /// Reads the hook from the environment (see [`CRASH_HOOK_VARIABLE`]).
    pub fn from_environment(
        environment: &Environment,
    ) -> Result<Option<CrashPoint>, InvalidCrashHook> {
        let Some(value) = environment.exact(CRASH_HOOK_VARIABLE) else {
            return Ok(None);
        };
        let invalid = || InvalidCrashHook {
            value: value.to_string(),
        };
        let (step, when) = value.rsplit_once(':').ok_or_else(invalid)?;
        let when = match when {
            "before" => CrashWhen::Before,
            "after" => CrashWhen::After,
            _ => return Err(invalid()),
        };
        Ok(Some(CrashPoint {
            step: step.to_string(),
            when,
        }))
    }

    pub(super) fn fire_if(point: Option<&CrashPoint>, step: &str, when: CrashWhen) {
        if let Some(point) = point {
            if point.step == step && point.when == when {
                // SIGKILL, exactly what an operator's `kill -9` or the OOM killer does: no destructor,
                // no lease revocation, no final checkpoint. A system call, not the `kill` program,
                // which a minimal system lacks.
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
                std::process::abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crash_hook_reads_step_and_moment() {
        let env = Environment::from_pairs([(CRASH_HOOK_VARIABLE, "pre/a[0]:after")]);
        assert_eq!(
            CrashPoint::from_environment(&env).unwrap(),
            Some(CrashPoint {
                step: "pre/a[0]".into(),
                when: CrashWhen::After
            })
        );
        let env = Environment::from_pairs([(CRASH_HOOK_VARIABLE, "x:never")]);
        assert!(CrashPoint::from_environment(&env).is_err());
    }
}
