//! DNS SRV discovery of etcd endpoints (`etcdDiscoverySrv`).
//!
//! Looks up `_etcd-client-ssl._tcp.<domain>` when TLS is configured and `_etcd-client._tcp.<domain>`
//! otherwise (the names etcd itself uses), and orders the targets by priority (lowest first), then
//! weight (highest first). hickory-resolver's `srv_lookup` hands back the answers in the server's
//! order, unsorted, so the sort is ours (`docs/architecture.md`, "SRV discovery").

use std::net::SocketAddr;

use hickory_resolver::Resolver;
use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;

use super::errors::EtcdError;
use crate::config::{EtcdEndpoint, Scheme};
use crate::datastore::StoreError;

/// The SRV service name to query for a domain.
pub fn service_name(domain: &str, tls: bool) -> String {
    let service = if tls {
        "_etcd-client-ssl"
    } else {
        "_etcd-client"
    };
    format!("{service}._tcp.{domain}.")
}

/// Finds the endpoints advertised for `domain`.
pub async fn discover(
    domain: &str,
    tls: bool,
    resolver_address: Option<SocketAddr>,
) -> Result<Vec<EtcdEndpoint>, StoreError> {
    let name = service_name(domain, tls);
    let shown = name.trim_end_matches('.').to_string();
    // SRV records that cannot be read leave netctl without servers: the datastore is unavailable.
    let failed = |source| {
        StoreError::Unavailable(Box::new(EtcdError::Discovery {
            name: shown.clone(),
            source,
        }))
    };
    let resolver = match resolver_address {
        Some(address) => {
            let mut server = NameServerConfig::udp_and_tcp(address.ip());
            for connection in &mut server.connections {
                connection.port = address.port();
            }
            Resolver::builder_with_config(
                ResolverConfig::from_name_servers(vec![server]),
                TokioRuntimeProvider::default(),
            )
            .build()
        }
        None => Resolver::builder_tokio().and_then(|builder| builder.build()),
    }
    .map_err(failed)?;

    let lookup = resolver.srv_lookup(name.as_str()).await.map_err(failed)?;
    let mut records: Vec<(u16, u16, String, u16)> = lookup
        .answers()
        .iter()
        .filter_map(|record| match &record.data {
            RData::SRV(srv) => Some((
                srv.priority,
                srv.weight,
                srv.target.to_ascii().trim_end_matches('.').to_string(),
                srv.port,
            )),
            _ => None,
        })
        .collect();
    if records.is_empty() {
        return Err(StoreError::Unavailable(Box::new(EtcdError::NoSrvRecords {
            name: shown,
        })));
    }
    order(&mut records);
    let scheme = if tls { Scheme::Https } else { Scheme::Http };
    Ok(records
        .into_iter()
        .map(|(_, _, host, port)| EtcdEndpoint { scheme, host, port })
        .collect())
}

/// Lowest priority first; within a priority, highest weight first; then by name for stability.
fn order(records: &mut [(u16, u16, String, u16)]) {
    records.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_name_depends_on_tls() {
        assert_eq!(
            service_name("example.org", true),
            "_etcd-client-ssl._tcp.example.org."
        );
        assert_eq!(
            service_name("example.org", false),
            "_etcd-client._tcp.example.org."
        );
    }

    #[test]
    fn records_sort_by_priority_then_weight() {
        let mut records = vec![
            (10, 5, "c".to_string(), 1),
            (0, 1, "b".to_string(), 1),
            (0, 9, "a".to_string(), 1),
        ];
        order(&mut records);
        let hosts: Vec<_> = records.iter().map(|r| r.2.as_str()).collect();
        assert_eq!(hosts, ["a", "b", "c"]);
    }
}
