//! Build settings cargo cannot take from Cargo.toml.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // `liza` is a short-lived process, started for every transition an agent or a person
    // makes; as a position-independent executable it relocates itself at every start
    // (some 45,000 relocations writing 1.3 MB of pointers, about a fifth of a `liza note`
    // on a 50-task blackboard: specs/quality.md P1). Linked position-dependent, those
    // pointers are fixed at link time. Only the binaries: tests and benches are left as
    // they are.
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
