//! Planning speed with every shipped runbook: loads the embedded set once, then times N plans of the
//! largest path (v3.13 → v3.27 Helm with 50 all-interfaces host endpoints: host-endpoint preparation,
//! ownership migration, post-upgrade checks and clean-up) and of a small one.
//!
//! `cargo bench --bench plan` (criterion-free: `harness = false`, plain `Instant` timing).
//! `NETCTL_BENCH_ITERATIONS` overrides N (default 200).

use std::hint::black_box;
use std::time::Instant;

use netctl::datastore::DatastoreType;
use netctl::plan::{
    DiscoveredFacts, FactOverrides, Facts, InstallMethod, PlanRequest, Release, plan_upgrade,
};
use netctl::runbook::RunbookSet;

fn request(from: &str, to: &str, method: InstallMethod, host_endpoints: usize) -> PlanRequest {
    let names: Vec<String> = (0..host_endpoints)
        .map(|n| format!("node{n}-all"))
        .collect();
    let overrides = FactOverrides {
        from: Some(from.parse::<Release>().expect("valid version")),
        datastore_type: Some(DatastoreType::Kubernetes),
        install_method: Some(method),
        set: vec![("all_interfaces_host_endpoints".into(), names.join(","))],
    };
    PlanRequest {
        procedure: "upgrade".into(),
        to: Some(to.into()),
        facts: Facts::assemble(&DiscoveredFacts::default(), &overrides).expect("valid facts"),
    }
}

fn main() {
    let iterations: u32 = std::env::var("NETCTL_BENCH_ITERATIONS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(200);
    let started = Instant::now();
    let runbooks = RunbookSet::embedded().expect("embedded runbooks load");
    println!(
        "load {} embedded runbooks: {:.2?}",
        runbooks.runbooks.len(),
        started.elapsed()
    );
    let cases = [
        (
            "v3.13 -> v3.27 helm, 50 host endpoints",
            request("v3.13.2", "v3.27.4", InstallMethod::Helm, 50),
        ),
        (
            "v3.26 -> v3.29 operator",
            request("v3.26.4", "v3.29.2", InstallMethod::Operator, 0),
        ),
    ];
    for (name, request) in &cases {
        let plan = plan_upgrade(&runbooks, request).expect("plan");
        let started = Instant::now();
        for _ in 0..iterations {
            black_box(plan_upgrade(black_box(&runbooks), black_box(request)).expect("plan"));
        }
        let each = started.elapsed() / iterations;
        println!(
            "plan {name} ({} steps): {each:.2?} per plan over {iterations} iterations",
            plan.steps.len()
        );
    }
}
