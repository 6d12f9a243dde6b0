//! Records the git commit netctl is built from as `NETCTL_GIT_COMMIT`, which `netctl version`
//! prints. A `NETCTL_GIT_COMMIT` set in the build environment wins (packagers building from a
//! tarball can name the commit); else `git rev-parse HEAD` in the source tree; else `unknown` (a
//! tarball without `.git`, or no git installed). Nothing else is generated here.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=NETCTL_GIT_COMMIT");
    let from_environment = std::env::var("NETCTL_GIT_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty());
    let commit = from_environment.or_else(|| {
        // Only this source tree's own repository: `git` would otherwise find an enclosing one.
        let top = git(&["rev-parse", "--show-toplevel"])?;
        let manifest = std::env::var("CARGO_MANIFEST_DIR").ok()?;
        let same = std::fs::canonicalize(&top).ok()? == std::fs::canonicalize(&manifest).ok()?;
        if !same {
            return None;
        }
        // Build again when HEAD moves (a commit, a checkout).
        for path in ["HEAD", "packed-refs"] {
            if let Some(file) = git(&["rev-parse", "--git-path", path]) {
                println!("cargo:rerun-if-changed={file}");
            }
        }
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"])
            && let Some(file) = git(&["rev-parse", "--git-path", &reference])
        {
            println!("cargo:rerun-if-changed={file}");
        }
        git(&["rev-parse", "HEAD"])
    });
    println!(
        "cargo:rustc-env=NETCTL_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
