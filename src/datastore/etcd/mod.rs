//! The etcd v3 backend (upstream key layout). Filled in by the foundation work.
