//! Records how the demo's figures were built: `ferrolock demo` prints it beside them,
//! since scripts/demo.sh builds at opt-level 1 to show them sooner, with the crates a
//! hand-off does not run (and this CLI's own code) at a lower level still
//! (FERROLOCK_COLD_OPT_LEVEL, set by scripts/build.sh --demo). The level reported is
//! the profile's, the one the library and the workers were built at: this package's
//! OPT_LEVEL is the cold one then.
fn main() {
    let var = |name: &str| std::env::var(name).ok();
    let cold = var("FERROLOCK_COLD_OPT_LEVEL");
    let level = cold.as_ref().and_then(|_| var("CARGO_PROFILE_RELEASE_OPT_LEVEL")).or_else(|| var("OPT_LEVEL"));
    for (name, value) in [
        ("FERROLOCK_BUILT_PROFILE", var("PROFILE")),
        ("FERROLOCK_BUILT_OPT_LEVEL", level),
        ("FERROLOCK_BUILT_COLD_OPT_LEVEL", Some(cold.unwrap_or_default())),
    ] {
        println!("cargo:rustc-env={name}={}", value.unwrap_or_else(|| "unknown".into()));
    }
    println!("cargo:rerun-if-env-changed=FERROLOCK_COLD_OPT_LEVEL");
    println!("cargo:rerun-if-env-changed=CARGO_PROFILE_RELEASE_OPT_LEVEL");
    println!("cargo:rerun-if-changed=build.rs");
}
