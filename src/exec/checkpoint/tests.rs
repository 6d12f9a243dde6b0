//! The local books: what a transition writes, what a kill leaves, what compaction keeps, how damage
//! reads. The datastore mirror is tested against real etcd (`tests/it/exec_apply.rs`,
//! `tests/it/exec_resume.rs`).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::config::DatastoreType;
use crate::plan::{
    Action, DiscoveredFacts, FactOverrides, Facts, InstallMethod, Phase, PlannedStep, Release,
};

fn facts() -> Facts {
    Facts::assemble(
        &DiscoveredFacts {
            datastore_type: Some(DatastoreType::EtcdV3),
            ..DiscoveredFacts::default()
        },
        &FactOverrides {
            from: Some(Release::new(3, 26, 4)),
            install_method: Some(InstallMethod::Manifest),
            ..FactOverrides::default()
        },
    )
    .unwrap()
}

fn plan(steps: usize) -> Plan {
    let steps = (0..steps)
        .map(|index| {
            let pause = Action::from_parts("pause", serde_json::json!({"message": "go?"})).unwrap();
            let (id, description) = (format!("pre/step[{index}]"), format!("step {index}"));
            PlannedStep::new(id, "pre", Phase::PreUpgrade, pause, description, "test")
        })
        .collect();
    Plan::new(
        "upgrade",
        Release::new(3, 26, 4),
        Release::new(3, 29, 2),
        facts(),
        steps,
    )
}

fn holder() -> Holder {
    Holder {
        user: "ops".into(),
        host: "h".into(),
        pid: 1,
        started: "t".into(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// Begins a run of `plan` in `directory` and records `steps` steps as succeeded.
fn run_some(directory: &Path, plan: &Plan, steps: usize) -> Checkpoint {
    runtime().block_on(async {
        let mut store = CheckpointStore::new(directory.to_path_buf(), None);
        let mut checkpoint = Checkpoint::new(plan, &holder());
        store.begin(plan, &mut checkpoint).await.unwrap();
        for index in 0..steps {
            checkpoint.step_mut(index).state = StepState::Running;
            store
                .record(&mut checkpoint, Change::step(index))
                .await
                .unwrap();
            checkpoint.step_mut(index).state = StepState::Succeeded;
            checkpoint
                .outputs
                .insert(format!("out{index}"), serde_json::json!(index));
            store
                .record(
                    &mut checkpoint,
                    Change::step(index).and_output(&format!("out{index}")),
                )
                .await
                .unwrap();
        }
        checkpoint
    })
}

fn load(directory: &Path) -> Result<Option<SavedRun>, CheckpointError> {
    CheckpointStore::new(directory.to_path_buf(), None).load_local()
}

#[test]
fn a_transition_appends_one_line_and_the_plan_is_stored_once() {
    let directory = tempfile::tempdir().unwrap();
    let plan = plan(3);
    let checkpoint = run_some(directory.path(), &plan, 2);
    let log = fs::read_to_string(directory.path().join(CHECKPOINT_LOG_FILE)).unwrap();
    assert_eq!(log.lines().count(), 4, "two transitions per step: {log}");
    let plans: Vec<_> = fs::read_dir(directory.path().join(PLANS_DIR))
        .unwrap()
        .collect();
    assert_eq!(plans.len(), 1);
    let snapshot = fs::read_to_string(directory.path().join(CHECKPOINT_FILE)).unwrap();
    assert!(
        !snapshot.contains("\"description\""),
        "the snapshot holds no plan"
    );

    let saved = load(directory.path()).unwrap().unwrap();
    assert_eq!(saved.plan, plan);
    assert_eq!(saved.checkpoint, checkpoint);
    assert_eq!(saved.checkpoint.done_count(), 2);
    assert_eq!(saved.checkpoint.outputs["out1"], serde_json::json!(1));
}

#[test]
fn state_files_are_owner_only_in_an_owner_only_directory() {
    let parent = tempfile::tempdir().unwrap();
    let directory = parent.path().join("state");
    run_some(&directory, &plan(1), 1);
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&directory), 0o700);
    assert_eq!(mode(&directory.join(PLANS_DIR)), 0o700);
    for file in [CHECKPOINT_FILE, CHECKPOINT_LOG_FILE] {
        assert_eq!(mode(&directory.join(file)), 0o600, "{file}");
    }
    for entry in fs::read_dir(directory.join(PLANS_DIR)).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o600);
    }
}

#[test]
fn a_half_written_last_record_is_the_transition_that_never_happened() {
    let directory = tempfile::tempdir().unwrap();
    let plan = plan(3);
    let checkpoint = run_some(directory.path(), &plan, 1);
    // What a kill in the middle of the next append leaves: part of a line, no newline.
    let log = directory.path().join(CHECKPOINT_LOG_FILE);
    let mut file = OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(br#"{"run_id":"x","sequence":99,"at":"t","step":{"ind"#)
        .unwrap();
    let saved = load(directory.path()).unwrap().unwrap();
    assert_eq!(saved.checkpoint, checkpoint);

    // Damage before the last record is not a kill's doing: it is reported with its line.
    let text = fs::read_to_string(&log).unwrap();
    let broken = text.replacen("\"sequence\"", "\"sequence\" oops", 1);
    fs::write(&log, broken).unwrap();
    let error = load(directory.path()).unwrap_err();
    assert!(
        error.to_string().contains("checkpoint.log, line 1"),
        "{error}"
    );
}

#[test]
fn the_log_is_folded_into_a_snapshot_after_twice_the_steps_and_replays_the_same() {
    let directory = tempfile::tempdir().unwrap();
    let steps = COMPACT_AFTER;
    let plan = plan(steps);
    let log_lines = || {
        fs::read_to_string(directory.path().join(CHECKPOINT_LOG_FILE))
            .unwrap()
            .lines()
            .count()
    };
    // Two transitions per step: one step short of the end, the log holds them all.
    let checkpoint = run_some(directory.path(), &plan, steps - 1);
    assert_eq!(log_lines(), 2 * (steps - 1));
    assert_eq!(
        load(directory.path()).unwrap().unwrap().checkpoint,
        checkpoint
    );
    // The last step's two transitions make 2 × steps: folded into the snapshot, the log empty.
    let checkpoint = run_some(directory.path(), &plan, steps);
    assert_eq!(log_lines(), 0, "folded after {} transitions", 2 * steps);
    let saved = load(directory.path()).unwrap().unwrap();
    assert_eq!(saved.checkpoint, checkpoint);
}

#[test]
fn a_damaged_snapshot_says_how_it_is_damaged() {
    let directory = tempfile::tempdir().unwrap();
    run_some(directory.path(), &plan(2), 1);
    let path = directory.path().join(CHECKPOINT_FILE);
    let good = fs::read(&path).unwrap();

    fs::write(&path, &good[..good.len() / 2]).unwrap();
    let error = load(directory.path()).unwrap_err();
    assert!(
        matches!(error, CheckpointError::Truncated { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("is truncated"), "{error}");

    let mut marked = "\u{feff}".as_bytes().to_vec();
    marked.extend_from_slice(&good);
    fs::write(&path, marked).unwrap();
    let error = load(directory.path()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("begins with a UTF-8 byte order mark"),
        "{error}"
    );

    fs::write(&path, &good).unwrap();
    for entry in fs::read_dir(directory.path().join(PLANS_DIR)).unwrap() {
        fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let error = load(directory.path()).unwrap_err();
    assert!(
        matches!(error, CheckpointError::PlanMissing { .. }),
        "{error}"
    );
}

#[test]
fn a_damaged_local_checkpoint_without_a_mirror_says_so() {
    let directory = tempfile::tempdir().unwrap();
    run_some(directory.path(), &plan(2), 1);
    fs::write(directory.path().join(CHECKPOINT_FILE), "{").unwrap();
    let store = CheckpointStore::new(directory.path().to_path_buf(), None);
    let error = runtime().block_on(store.load_latest()).unwrap_err();
    assert!(
        matches!(&error, CheckpointError::DamagedLocal { mirrored: None, .. }),
        "{error}"
    );
    assert!(
        error
            .hint()
            .unwrap()
            .contains("the datastore holds no copy"),
        "{:?}",
        error.hint()
    );
}

#[test]
fn a_completed_run_of_the_earlier_format_is_history_and_an_unfinished_one_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join(CHECKPOINT_FILE);
    fs::write(
        &path,
        r#"{"format_version": 1, "run": {"state": "completed"}}"#,
    )
    .unwrap();
    assert_eq!(load(directory.path()).unwrap(), None);
    fs::write(
        &path,
        r#"{"format_version": 1, "run": {"state": "in-progress"}}"#,
    )
    .unwrap();
    let error = load(directory.path()).unwrap_err();
    assert!(
        matches!(error, CheckpointError::UnsupportedVersion { found: 1, .. }),
        "{error}"
    );
}

#[test]
fn the_default_state_directory_follows_xdg() {
    let env = Environment::from_pairs([("XDG_STATE_HOME", "/s"), ("HOME", "/h")]);
    assert_eq!(default_state_dir(&env).unwrap(), PathBuf::from("/s/netctl"));
    let env = Environment::from_pairs([("XDG_STATE_HOME", "relative"), ("HOME", "/h")]);
    assert_eq!(
        default_state_dir(&env).unwrap(),
        PathBuf::from("/h/.local/state/netctl")
    );
    assert_eq!(default_state_dir(&Environment::default()), None);
}

#[test]
fn an_atomic_write_replaces_the_whole_file() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("checkpoint.json");
    write_atomically(&path, b"first, and rather long").unwrap();
    write_atomically(&path, b"second").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second");
    let leftovers: Vec<_> = fs::read_dir(directory.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
}
