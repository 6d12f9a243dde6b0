//! `netctl node status`: the BGP sessions of a node, asked two ways.
//!
//! On the node itself (as upstream's `calicoctl node status`): whether the agent runs
//! (`processes.rs`, from the process table), and for each BIRD daemon that runs its peers, asked
//! over its control socket (`socket.rs`) and read from BIRD's numbered reply lines (`bird.rs`);
//! `local.rs` puts that together and `table.rs` draws upstream's boxed table. From anywhere, through
//! the datastore: a CalicoNodeStatus per node that calico-node fills in (`remote.rs`: the request
//! object, reading what was filled in, the tables); creating, waiting for and deleting those
//! objects is the executor's `node.status` step, not this module's.
//!
//! Everything here reads; nothing is written but the temporary objects, and those by the executor.

pub mod bird;
pub mod local;
pub mod processes;
pub mod remote;
pub mod socket;
pub mod table;

pub use local::{LocalStatus, LocalStatusError, LocalStatusOptions, node_status};
