//! BIRD's control-socket replies to `show protocols`, read as upstream reads them
//! (`calicoctl/calicoctl/commands/node/status.go`, v3.29–v3.32) — and where upstream reads too
//! much into silence, refused.
//!
//! BIRD answers in numbered lines: `0001 BIRD v0.3.3+birdv1.6.8 ready.` when a client connects,
//! then for `show protocols` a heading `2002-name proto table state since info`, the first row as
//! `1002-<row>`, further rows starting with a space, and `0000` at the end. A line with any other
//! code (BIRD's `8xxx`/`9xxx` errors among them) is refused, as is a heading that is not exactly
//! those six names. Only BGP rows named for Calico's peers count: `Global_<ip>`, `Mesh_<ip>` and
//! `Node_<ip>`, the address written with `_` for its separators (`Mesh_fd80_24e2__2`).
//!
//! Refinement: a reply that stops before its `0000` (the daemon closed the socket half way) is an
//! error here; upstream prints the rows it got as if they were all.

use serde::Serialize;

/// How the peer is configured, from the row's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PeerType {
    /// `Global_…`: a BGPPeer without a node or node selector.
    #[serde(rename = "GlobalPeer")]
    Global,
    /// `Mesh_…`: the node-to-node mesh.
    #[serde(rename = "NodeMesh")]
    Mesh,
    /// `Node_…`: a BGPPeer for this node.
    #[serde(rename = "NodePeer")]
    Node,
}

impl PeerType {
    fn from_prefix(prefix: &str) -> Option<PeerType> {
        match prefix {
            "Global" => Some(PeerType::Global),
            "Mesh" => Some(PeerType::Mesh),
            "Node" => Some(PeerType::Node),
            _ => None,
        }
    }

    /// What upstream's table shows.
    pub fn describe(self) -> &'static str {
        match self {
            PeerType::Global => "global",
            PeerType::Mesh => "node-to-node mesh",
            PeerType::Node => "node specific",
        }
    }

    /// The type as CalicoNodeStatus names it (`NodeMesh`, `NodePeer`, `GlobalPeer`).
    pub fn from_status(name: &str) -> Option<PeerType> {
        match name {
            "GlobalPeer" => Some(PeerType::Global),
            "NodeMesh" => Some(PeerType::Mesh),
            "NodePeer" => Some(PeerType::Node),
            _ => None,
        }
    }
}

/// Which BIRD daemon: `bird` (IPv4) or `bird6` (IPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum IpVersion {
    #[serde(rename = "4")]
    V4,
    #[serde(rename = "6")]
    V6,
}

impl IpVersion {
    /// `4` or `6`, as the messages say it.
    pub fn number(self) -> &'static str {
        match self {
            IpVersion::V4 => "4",
            IpVersion::V6 => "6",
        }
    }

    /// What separates the parts of an address of this version.
    fn separator(self) -> &'static str {
        match self {
            IpVersion::V4 => ".",
            IpVersion::V6 => ":",
        }
    }

    /// The daemon's process and socket name: `bird` or `bird6`.
    pub fn daemon(self) -> &'static str {
        match self {
            IpVersion::V4 => "bird",
            IpVersion::V6 => "bird6",
        }
    }
}

/// One BGP peer row of `show protocols`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BgpPeer {
    #[serde(rename = "peerIP")]
    pub peer_ip: String,
    #[serde(rename = "type")]
    pub peer_type: PeerType,
    /// BIRD's protocol state: `up`, `start`, `down`.
    pub state: String,
    pub since: String,
    /// The BGP state: `Established`, `Active`, `Connect`, `Idle`, …
    pub bgp_state: String,
    /// What follows the BGP state (`Socket: Connection refused`), if anything.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub info: String,
}

impl BgpPeer {
    /// Reads one row (without its `1002-` or leading space). `None` for rows that are not
    /// Calico's BGP peers: other protocols, other names, fewer than six columns.
    pub fn from_row(row: &str, version: IpVersion) -> Option<BgpPeer> {
        let columns: Vec<&str> = row.split_whitespace().collect();
        if columns.len() < 6 || columns[1] != "BGP" {
            return None;
        }
        let (prefix, address) = columns[0].split_once('_')?;
        let peer_type = PeerType::from_prefix(prefix)?;
        if address.is_empty() {
            return None;
        }
        Some(BgpPeer {
            peer_ip: address.replace('_', version.separator()),
            peer_type,
            state: columns[3].to_string(),
            since: columns[4].to_string(),
            bgp_state: columns[5].to_string(),
            info: columns[6..].join(" "),
        })
    }

    /// The table's INFO cell: the BGP state and what follows it.
    pub fn info_cell(&self) -> String {
        if self.info.is_empty() {
            self.bgp_state.clone()
        } else {
            format!("{} {}", self.bgp_state, self.info)
        }
    }
}

/// The headings `show protocols` must have.
pub const EXPECTED_HEADINGS: [&str; 6] = ["name", "proto", "table", "state", "since", "info"];

/// Why a reply cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("unknown BIRD table output format: the heading is `{heading}`")]
    Heading { heading: String },
    #[error("unexpected output line from BIRD: `{line}`")]
    UnexpectedLine { line: String },
    #[error("the reply ended before BIRD's end-of-reply line `0000` (after {lines} lines)")]
    Truncated { lines: usize },
}

/// Reads a reply line by line; [`ProtocolsReply::push`] says when the reply is complete.
#[derive(Debug, Clone)]
pub struct ProtocolsReply {
    version: IpVersion,
    /// What BIRD said when the client connected (`BIRD v0.3.3+birdv1.6.8 ready.`).
    pub greeting: Option<String>,
    pub peers: Vec<BgpPeer>,
    lines: usize,
    done: bool,
}

impl ProtocolsReply {
    pub fn new(version: IpVersion) -> ProtocolsReply {
        ProtocolsReply {
            version,
            greeting: None,
            peers: Vec::new(),
            lines: 0,
            done: false,
        }
    }

    /// Takes the next line. `Ok(true)` once the end-of-reply line came.
    pub fn push(&mut self, line: &str) -> Result<bool, ReplyError> {
        self.lines += 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with("0000") {
            self.done = true;
        } else if let Some(rest) = line.strip_prefix("0001") {
            self.greeting = Some(rest.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("2002") {
            let headings: Vec<&str> = rest.get(1..).unwrap_or("").split_whitespace().collect();
            if headings != EXPECTED_HEADINGS {
                return Err(ReplyError::Heading {
                    heading: rest.get(1..).unwrap_or("").trim().to_string(),
                });
            }
        } else if let Some(rest) = line.strip_prefix("1002") {
            self.row(rest.get(1..).unwrap_or(""));
        } else if let Some(rest) = line.strip_prefix(' ') {
            self.row(rest);
        } else {
            return Err(ReplyError::UnexpectedLine {
                line: line.to_string(),
            });
        }
        Ok(self.done)
    }

    fn row(&mut self, row: &str) {
        if let Some(peer) = BgpPeer::from_row(row, self.version) {
            self.peers.push(peer);
        }
    }

    /// The peers, once the reply is complete.
    pub fn finish(self) -> Result<(Option<String>, Vec<BgpPeer>), ReplyError> {
        if self.done {
            Ok((self.greeting, self.peers))
        } else {
            Err(ReplyError::Truncated { lines: self.lines })
        }
    }
}

/// Reads a whole reply from its text (what the socket sent, lines after `0000` ignored).
pub fn parse_protocols(
    text: &str,
    version: IpVersion,
) -> Result<(Option<String>, Vec<BgpPeer>), ReplyError> {
    let mut reply = ProtocolsReply::new(version);
    for line in text.lines() {
        if reply.push(line)? {
            break;
        }
    }
    reply.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(
        address: &str,
        peer_type: PeerType,
        state: &str,
        since: &str,
        bgp: &str,
        info: &str,
    ) -> BgpPeer {
        BgpPeer {
            peer_ip: address.into(),
            peer_type,
            state: state.into(),
            since: since.into(),
            bgp_state: bgp.into(),
            info: info.into(),
        }
    }

    #[test]
    fn rows_of_calicos_peers_are_read_and_others_skipped() {
        // The cases of upstream's table test (`status_test.go`), as facts: which rows count.
        let v4 = IpVersion::V4;
        assert_eq!(
            BgpPeer::from_row("kernel1  Kernel   master   up     2016-11-21", v4),
            None
        );
        assert_eq!(
            BgpPeer::from_row("device1  Device   master   up     2016-11-21", v4),
            None
        );
        assert_eq!(
            BgpPeer::from_row(
                "Meshd_172_17_8_102 BGP      master   up     2016-11-21  Established",
                v4
            ),
            None
        );
        assert_eq!(
            BgpPeer::from_row(
                "Mesh_172_17_8_102 BGP      master   up     2016-11-21  Established",
                v4
            ),
            Some(peer(
                "172.17.8.102",
                PeerType::Mesh,
                "up",
                "2016-11-21",
                "Established",
                ""
            ))
        );
        assert_eq!(
            BgpPeer::from_row(
                "Node_172_17_80_102 BGP      master   up     2016-11-21  Active    Socket: error",
                v4
            ),
            Some(peer(
                "172.17.80.102",
                PeerType::Node,
                "up",
                "2016-11-21",
                "Active",
                "Socket: error"
            ))
        );
        assert_eq!(
            BgpPeer::from_row("Global_172_17_8_133 BGP master down 2016-11-2 Failed", v4),
            Some(peer(
                "172.17.8.133",
                PeerType::Global,
                "down",
                "2016-11-2",
                "Failed",
                ""
            ))
        );
        // A static protocol named like a peer is not one; five columns are too few.
        assert_eq!(
            BgpPeer::from_row("Mesh_10_0_0_1 Static master up 10:00:00 x", v4),
            None
        );
        assert_eq!(
            BgpPeer::from_row("Mesh_10_0_0_1 BGP master up 10:00:00", v4),
            None
        );
        assert_eq!(
            BgpPeer::from_row(
                "Mesh_fd80_24e2_f998_72d7__2 BGP master up 10:00:00 Established",
                IpVersion::V6
            )
            .map(|peer| peer.peer_ip),
            Some("fd80:24e2:f998:72d7::2".to_string())
        );
    }

    #[test]
    fn a_whole_reply_gives_its_peers_in_order() {
        let text = "0001 BIRD 1.5.0 ready.\n\
                    2002-name     proto    table    state  since       info\n\
                    1002-kernel1  Kernel   master   up     2016-11-21\n \
                    device1  Device   master   up     2016-11-21\n \
                    direct1  Direct   master   up     2016-11-21\n \
                    Mesh_172_17_8_102 BGP      master   up     2016-11-21  Established\n \
                    Global_172_17_8_103 BGP      master   up     2016-11-21  Established\n \
                    Node_172_17_8_104 BGP      master   down     2016-11-21  Failed  Socket: error\n\
                    0000\n\
                    anything after the end is not read\n";
        let (greeting, peers) = parse_protocols(text, IpVersion::V4).unwrap();
        assert_eq!(greeting.as_deref(), Some("BIRD 1.5.0 ready."));
        let addresses: Vec<&str> = peers.iter().map(|peer| peer.peer_ip.as_str()).collect();
        assert_eq!(addresses, ["172.17.8.102", "172.17.8.103", "172.17.8.104"]);
        assert_eq!(peers[2].info_cell(), "Failed Socket: error");
    }

    #[test]
    fn a_wrong_heading_a_rogue_line_and_a_cut_reply_are_refused() {
        let heading =
            "0001 BIRD 1.5.0 ready.\n2002-name     proto    table    state  foo       info\n0000\n";
        assert!(matches!(
            parse_protocols(heading, IpVersion::V4),
            Err(ReplyError::Heading { .. })
        ));
        let rogue = "0001 BIRD 1.5.0 ready.\n2002-name proto table state since info\n1002-kernel1 Kernel master up 2016-11-21\n9000\n";
        assert_eq!(
            parse_protocols(rogue, IpVersion::V4),
            Err(ReplyError::UnexpectedLine {
                line: "9000".into()
            })
        );
        let cut = "0001 BIRD 1.5.0 ready.\n2002-name proto table state since info\n1002-Mesh_10_0_0_1 BGP master up 10:00:00 Established\n";
        assert_eq!(
            parse_protocols(cut, IpVersion::V4),
            Err(ReplyError::Truncated { lines: 3 })
        );
        // Short lines with a known code do not break the reader.
        assert!(
            parse_protocols(
                "1002\n2002-name proto table state since info\n0000\n",
                IpVersion::V4
            )
            .is_ok()
        );
    }
}
