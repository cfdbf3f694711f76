//! The benchmark's modules (`benches/bench_support/`) import each other in no cycle: what
//! two of them share lives in a third that both import. `mod.rs` declares the modules and
//! re-exports their items, so an item named through it (`super::drive`) counts as an
//! import of the module it comes from; `mod.rs`'s own items (`BenchEnv`) are the module
//! `mod`, and its declarations and re-exports are no imports of its own.

use std::collections::{BTreeMap, BTreeSet};

use super::architecture::{
    cycle_in, flatten_uses, inline_paths, production_code, root, rust_files,
};

const DIR: &str = "benches/bench_support";

/// The modules of the directory, and the module each item `mod.rs` re-exports comes from.
fn modules() -> (BTreeSet<String>, BTreeMap<String, String>) {
    let modules: BTreeSet<String> = rust_files(&root().join(DIR))
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    let text = std::fs::read_to_string(root().join(DIR).join("mod.rs")).unwrap();
    let reexports = flatten_uses(&text)
        .into_iter()
        .filter_map(|path| {
            let (module, item) = path.split_once("::")?;
            let item = item.rsplit("::").next()?.to_string();
            modules.contains(module).then(|| (item, module.to_string()))
        })
        .collect();
    (modules, reexports)
}

/// The module a name reached through `mod.rs` lives in.
fn module_named(
    name: &str,
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> String {
    match reexports.get(name) {
        Some(module) => module.clone(),
        None if modules.contains(name) => name.to_string(),
        None => "mod".to_string(),
    }
}

/// The modules a module imports (`super::x`, `crate::bench_support::x`).
fn imports_of_module(
    code: &str,
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let paths = flatten_uses(code).into_iter().chain(inline_paths(code));
    paths
        .filter_map(|path| {
            let rest = path
                .strip_prefix("super::")
                .or_else(|| path.strip_prefix("crate::bench_support::"))?;
            let name = rest.split("::").next()?;
            Some(module_named(name, modules, reexports))
        })
        .collect()
}

/// The modules `mod.rs`'s own code names (`floor::Floor`, or an item it re-exports), its
/// declarations, re-exports and comments aside.
fn imports_of_mod(
    code: &str,
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let own = code.lines().map(str::trim).filter(|l| {
        !["mod ", "pub mod ", "pub use ", "#[path", "//"]
            .iter()
            .any(|p| l.starts_with(p))
    });
    let mut out = BTreeSet::new();
    for line in own {
        let words = line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'));
        for word in words {
            let first = word.split("::").next().unwrap_or_default();
            if reexports.contains_key(first) || (modules.contains(first) && word.contains("::")) {
                out.insert(module_named(first, modules, reexports));
            }
        }
    }
    out.remove("mod");
    out
}

#[test]
fn the_benchmark_modules_import_each_other_in_no_cycle() {
    let (modules, reexports) = modules();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for module in &modules {
        let text = std::fs::read_to_string(root().join(DIR).join(format!("{module}.rs"))).unwrap();
        let code = production_code(&text);
        let mut imports = match module.as_str() {
            "mod" => imports_of_mod(code, &modules, &reexports),
            _ => imports_of_module(code, &modules, &reexports),
        };
        imports.remove(module);
        edges.insert(module.clone(), imports);
    }
    // The reader sees what it reads: the workflow rows import the queue row, and every
    // module that names `BenchEnv` imports `mod`.
    assert!(edges["workflow"].contains("queue"), "{edges:?}");
    assert!(edges["service"].contains("mod"), "{edges:?}");
    if let Some(mut cycle) = cycle_in(&edges) {
        cycle.push(cycle[0].clone());
        panic!(
            "the modules of {DIR} import each other in a cycle: {}",
            cycle.join(" -> ")
        );
    }
}
