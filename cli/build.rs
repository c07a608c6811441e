//! Records how this binary was optimised: `ferrolock demo` prints it beside its
//! figures, since scripts/demo.sh builds at opt-level 1 to show them sooner.
fn main() {
    for (var, name) in [("PROFILE", "FERROLOCK_BUILT_PROFILE"), ("OPT_LEVEL", "FERROLOCK_BUILT_OPT_LEVEL")] {
        let value = std::env::var(var).unwrap_or_else(|_| "unknown".into());
        println!("cargo:rustc-env={name}={value}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
