//! The container engine: which one (`docker` or `podman`, both take the same `run` flags) and where it
//! is on PATH. PATH is handed in by the caller (read through `config::Environment`), never read here.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::NodeError;

/// A container engine netctl knows how to drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    Docker,
    Podman,
}

impl Engine {
    /// Auto-detection order: docker first (upstream's engine), then podman.
    pub const SEARCH_ORDER: [Engine; 2] = [Engine::Docker, Engine::Podman];

    /// The program name, as shown in commands.
    pub fn program(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }
}

/// An engine found on PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedEngine {
    pub engine: Engine,
    pub path: PathBuf,
}

impl LocatedEngine {
    /// Finds `engine` on PATH, or the first of [`Engine::SEARCH_ORDER`] when none is named.
    pub fn locate(engine: Option<Engine>, path_variable: &str) -> Result<LocatedEngine, NodeError> {
        let candidates: &[Engine] = match &engine {
            Some(engine) => std::slice::from_ref(engine),
            None => &Engine::SEARCH_ORDER,
        };
        for candidate in candidates {
            if let Some(path) = find_program(candidate.program(), path_variable) {
                return Ok(LocatedEngine {
                    engine: *candidate,
                    path,
                });
            }
        }
        Err(match engine {
            Some(engine) => NodeError::EngineMissing {
                engine: engine.program(),
            },
            None => NodeError::NoEngine,
        })
    }
}

/// The first executable file called `program` in the directories of `path_variable`.
pub fn find_program(program: &str, path_variable: &str) -> Option<PathBuf> {
    std::env::split_paths(path_variable)
        .filter(|directory| !directory.as_os_str().is_empty())
        .map(|directory| directory.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(directory: &Path, name: &str) {
        let path = directory.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn docker_is_preferred_then_podman() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        executable(first.path(), "podman");
        executable(second.path(), "docker");
        let path = format!("{}:{}", first.path().display(), second.path().display());
        let found = LocatedEngine::locate(None, &path).unwrap();
        assert_eq!(found.engine, Engine::Docker);
        assert_eq!(found.path, second.path().join("docker"));
        let podman = LocatedEngine::locate(Some(Engine::Podman), &path).unwrap();
        assert_eq!(podman.path, first.path().join("podman"));
    }

    #[test]
    fn non_executable_files_are_not_engines() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(directory.path().join("docker"), "").unwrap();
        let path = directory.path().display().to_string();
        assert!(matches!(
            LocatedEngine::locate(None, &path),
            Err(NodeError::NoEngine)
        ));
        assert!(matches!(
            LocatedEngine::locate(Some(Engine::Docker), &path),
            Err(NodeError::EngineMissing { engine: "docker" })
        ));
    }
}
