//! Splitting a pool's CIDR into 2^k equal children (`ipam split`), with upstream's refusals
//! (`calicoctl/calicoctl/commands/ipam/split.go: splitCIDR`) and one more: a child smaller than the
//! pool's block size could hold no block, and a pool whose block size exceeds its CIDR is invalid.
//! The children are named as upstream names them: `split-<pool>-<i>`, the pool's name cut to 245
//! characters when the whole would pass Kubernetes' 253. No I/O.

use super::cidr::Cidr;

/// Why a pool cannot be split so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("number to split the pool into is not a valid power of 2: {0}")]
    NotAPowerOfTwo(u64),
    #[error("the CIDR {cidr} is not large enough to be split into {parts} parts")]
    TooSmall { cidr: Cidr, parts: u64 },
    #[error(
        "the CIDR {cidr} split into {parts} parts gives /{child_prefix} pools, smaller than the pool's block size /{block_size}"
    )]
    SmallerThanBlocks {
        cidr: Cidr,
        parts: u64,
        child_prefix: u8,
        block_size: u8,
    },
}

impl crate::errors::Hint for SplitError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            SplitError::NotAPowerOfTwo(_) => "give 2, 4, 8, ... (a power of two above 1)".into(),
            SplitError::TooSmall { .. } | SplitError::SmallerThanBlocks { .. } => {
                "split into fewer parts".into()
            }
        })
    }
}

/// The child networks of `cidr` in `parts` parts, in address order.
pub fn split(cidr: Cidr, parts: u64, block_size: Option<u8>) -> Result<Vec<Cidr>, SplitError> {
    if parts < 2 || !parts.is_power_of_two() {
        return Err(SplitError::NotAPowerOfTwo(parts));
    }
    let power = parts.trailing_zeros() as u8;
    let bits = cidr.version().bits();
    let child_prefix = cidr.prefix() + power;
    if child_prefix > bits {
        return Err(SplitError::TooSmall { cidr, parts });
    }
    if let Some(block_size) = block_size.filter(|size| child_prefix > *size) {
        return Err(SplitError::SmallerThanBlocks {
            cidr,
            parts,
            child_prefix,
            block_size,
        });
    }
    let first =
        Cidr::new(cidr.network(), child_prefix).ok_or(SplitError::TooSmall { cidr, parts })?;
    (0..u128::from(parts))
        .map(|index| {
            first
                .offset(index)
                .ok_or(SplitError::TooSmall { cidr, parts })
        })
        .collect()
}

/// The name of the `index`-th child of pool `name`.
pub fn child_name(name: &str, index: usize) -> String {
    let whole = format!("split-{name}-{index}");
    if whole.len() <= 253 {
        return whole;
    }
    let mut cut = 245.min(name.len());
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("split-{}-{index}", &name[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidrs(list: &[Cidr]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn pools_split_as_upstreams_tests_expect() {
        let pool = Cidr::parse("172.0.0.0/8").unwrap();
        assert_eq!(
            cidrs(&split(pool, 2, Some(26)).unwrap()),
            ["172.0.0.0/9", "172.128.0.0/9"]
        );
        let v6 = Cidr::parse("fd5f:abcd:64::/48").unwrap();
        assert_eq!(
            cidrs(&split(v6, 4, Some(122)).unwrap()),
            [
                "fd5f:abcd:64::/50",
                "fd5f:abcd:64:4000::/50",
                "fd5f:abcd:64:8000::/50",
                "fd5f:abcd:64:c000::/50"
            ]
        );
    }

    #[test]
    fn upstreams_refusals_and_the_block_size() {
        let pool = Cidr::parse("10.0.0.0/30").unwrap();
        assert_eq!(split(pool, 3, None), Err(SplitError::NotAPowerOfTwo(3)));
        assert_eq!(split(pool, 1, None), Err(SplitError::NotAPowerOfTwo(1)));
        assert_eq!(split(pool, 0, None), Err(SplitError::NotAPowerOfTwo(0)));
        assert!(matches!(
            split(pool, 8, None),
            Err(SplitError::TooSmall { .. })
        ));
        let pool = Cidr::parse("10.0.0.0/24").unwrap();
        assert!(matches!(
            split(pool, 8, Some(26)),
            Err(SplitError::SmallerThanBlocks {
                child_prefix: 27,
                ..
            })
        ));
        assert_eq!(split(pool, 4, Some(26)).unwrap().len(), 4);
    }

    #[test]
    fn children_are_named_as_upstream_names_them() {
        assert_eq!(
            child_name("default-ipv4-ippool", 1),
            "split-default-ipv4-ippool-1"
        );
        let long = "p".repeat(250);
        assert_eq!(child_name(&long, 3).len(), "split-".len() + 245 + 2);
    }
}
