//! The pages of a list on etcd: how many resources each page after the first asks for (a byte
//! budget, because etcd 3.4 walks the rest of the range on every limited read), how a page's
//! entries are decoded for the detail asked, and the opaque continue token that pins a list to
//! one revision.

use etcd_client::KeyValue;

use super::conversion;
use super::errors::EtcdError;
use crate::datastore::{Detail, Page, StoreError};
use crate::resource::Kind;

/// The stored bytes a list asks for per page after the first (see [`next_page_size`]), when it
/// decodes only a few fields of each resource (tables).
pub(super) const PAGE_BYTES: usize = 4 << 20;

/// The same when every resource is decoded whole (`-o json`, `-o yaml`, writes): a decoded
/// resource takes several times its stored bytes (maps of strings), so a 4 MiB page of 500-byte
/// host endpoints held twice was 160 MiB at 100,000. A quarter of the budget keeps memory flat
/// (the pages are fewer than 100 even at 100,000 of them, so etcd's walk of the range stays small).
pub(super) const FULL_PAGE_BYTES: usize = 1 << 20;

/// The same for documents printed from their stored text ([`Detail::Document`]): only the
/// metadata is decoded, so a resource takes little more than its stored bytes. At 1 MiB, 100,000
/// host endpoints took 60 reads and etcd's walks of the range cost it twice the CPU of the data
/// (0.65 s against 0.3 s); at 2 MiB the list takes 30 reads in about 45 MiB.
pub(super) const DOCUMENT_PAGE_BYTES: usize = 2 << 20;

/// How many resources the next page of a list asks for.
///
/// etcd 3.4 walks every key left in the range on each limited read (to count them), whatever the
/// limit: pages of 1000 over 100,000 keys walk 5 million index entries, and that, not the data,
/// was most of a long list's time. So after the first page (`first` resources, quick to print) a
/// list asks for as many as fit in [`PAGE_BYTES`] at the average size seen so far, and for all
/// that is left when that fits: 100,000 host endpoints of 500 bytes take 14 reads instead of 100.
/// The budget bounds memory: three pages are held at most (the one printed, the one decoded and
/// the one in flight: `datastore::Pages`).
pub(super) fn next_page_size(
    page_bytes: usize,
    first: usize,
    average_bytes: usize,
    remaining: usize,
) -> usize {
    let budget = (page_bytes / average_bytes.max(1)).max(first);
    if remaining <= budget {
        remaining.max(1)
    } else {
        budget
    }
}

/// The items of one page of a list, decoded as much as `detail` asks.
pub(super) fn decode_page(
    kind: Kind,
    detail: &Detail,
    entries: Vec<KeyValue>,
    continue_token: Option<String>,
    revision: i64,
) -> Result<Page, StoreError> {
    let mut items = Vec::with_capacity(entries.len());
    let mut bodies = Vec::new();
    for entry in &entries {
        let key = String::from_utf8_lossy(entry.key());
        if !conversion::key_matches_kind(kind, &key) {
            continue;
        }
        let resource = match detail {
            Detail::Full => conversion::decode(&key, entry.value(), entry.mod_revision()),
            Detail::Document => {
                conversion::decode_document(&key, entry.value(), entry.mod_revision()).map(
                    |(resource, body)| {
                        bodies.push(body);
                        resource
                    },
                )
            }
            Detail::Summary {
                spec_fields,
                labels,
            } => conversion::decode_summary(
                kind,
                &key,
                entry.value(),
                entry.mod_revision(),
                spec_fields,
                *labels,
            ),
        };
        items.push(resource?);
    }
    Ok(Page {
        items,
        bodies,
        continue_token,
        revision: revision.to_string(),
    })
}

/// The opaque continue token of a paged list: the pinned revision, the next page's size and the
/// next start key.
pub(super) fn encode_token(revision: i64, limit: usize, next_key: &[u8]) -> String {
    let hex: String = next_key.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{revision}.{limit}.{hex}")
}

pub(super) fn decode_token(token: &str) -> Result<(i64, usize, Vec<u8>), StoreError> {
    let invalid =
        || StoreError::failed("a list", EtcdError::InvalidContinueToken(token.to_string()));
    let mut parts = token.splitn(3, '.');
    let (Some(revision), Some(limit), Some(hex)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid());
    };
    let revision = revision.parse().map_err(|_| invalid())?;
    let limit = limit.parse().map_err(|_| invalid())?;
    if hex.len() % 2 != 0 {
        return Err(invalid());
    }
    let key = (0..hex.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(&hex[index..index + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| invalid())?;
    Ok((revision, limit, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let token = encode_token(42, 7000, b"/calico/x\0");
        assert_eq!(
            decode_token(&token).unwrap(),
            (42, 7000, b"/calico/x\0".to_vec())
        );
        assert!(decode_token("nonsense").is_err());
        assert!(decode_token("42.x.00").is_err());
    }

    #[test]
    fn pages_after_the_first_fill_the_byte_budget_or_take_the_rest() {
        // 500-byte values: 8388 fit in 4 MiB.
        assert_eq!(
            next_page_size(PAGE_BYTES, 1000, 500, 99_000),
            PAGE_BYTES / 500
        );
        assert_eq!(
            next_page_size(FULL_PAGE_BYTES, 1000, 500, 99_000),
            FULL_PAGE_BYTES / 500
        );
        // What is left fits: one more page takes it all.
        assert_eq!(next_page_size(PAGE_BYTES, 1000, 500, 5_000), 5_000);
        // Values so large that fewer than the first page's count fit: never below that count.
        assert_eq!(next_page_size(PAGE_BYTES, 1000, 1 << 20, 50_000), 1000);
        // A caller's small first page (tests) still grows by the budget.
        assert_eq!(next_page_size(PAGE_BYTES, 10, 100, 15), 15);
    }
}
