//! Where the tests find the stand-in agent (`headspace-agent`, this crate's binary).
//!
//! Cargo hands a test the path of its own package's binaries only (`CARGO_BIN_EXE_…`), and the
//! stand-in lives here, out of the product crates. So a test asks for it: the first call in a
//! test process builds it with the test's own cargo, profile and target directory (a no-op
//! when it is fresh) and every call returns its path.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The path of the `headspace-agent` binary, built first if needed (once per test process).
pub fn stand_in_agent() -> String {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(build).clone()
}

fn build() -> String {
    // A test runs as `<target>/<profile>/deps/<name>-<hash>`; binaries go in `<profile>/`.
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir: PathBuf = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test runs from <target>/<profile>/deps")
        .to_path_buf();
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile directory")
        .to_string();
    let target_dir = profile_dir.parent().expect("a target directory");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .args(["-p", "headspace-testkit", "--features", "stand-in"])
        .args(["--bin", "headspace-agent", "--target-dir"])
        .arg(target_dir);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let out = cmd.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "building the stand-in agent failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = profile_dir.join("headspace-agent");
    assert!(bin.exists(), "{} after the build", bin.display());
    bin.to_string_lossy().into_owned()
}
