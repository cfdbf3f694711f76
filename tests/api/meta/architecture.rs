//! The architecture, checked: which layer may import which (`docs/architecture.md`), no
//! import cycle between files, and files and functions small enough to read in one sitting.
//! These read the sources; they need no service.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 400;
const MAX_FN_LINES: usize = 80;

/// Each layer and the crate modules it may import. Everything else (`startup`, `config`,
/// `telemetry`, `shutdown`, `lib.rs`, `main.rs`) is the wiring, which may import anything.
const LAYERS: &[(&str, &[&str])] = &[
    ("breaker", &[]),
    ("tasks", &[]),
    ("domain", &[]),
    ("lock", &["breaker", "domain"]),
    ("store", &["breaker", "domain"]),
    ("outbox", &["breaker", "domain", "store"]),
    (
        "usecases",
        &["breaker", "domain", "lock", "store", "outbox", "tasks"],
    ),
    (
        "web",
        &[
            "breaker", "domain", "lock", "store", "outbox", "usecases", "tasks",
        ],
    ),
    (
        "http",
        &[
            "breaker", "domain", "lock", "store", "outbox", "usecases", "tasks", "web",
        ],
    ),
    (
        "console",
        &[
            "breaker", "domain", "lock", "store", "outbox", "usecases", "tasks", "web",
        ],
    ),
];

pub(super) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(super) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The module path of a file under `src/`: `src/store/pg.rs` -> ["store", "pg"].
pub(super) fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The source without its test module (by convention last, after `#[cfg(test)]`).
pub(super) fn production_code(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

/// Every `crate::`, `super::` and `self::` path the code names, as absolute module paths.
pub(super) fn referenced_paths(file: &Path, code: &str) -> Vec<Vec<String>> {
    let module = module_of(file);
    let mut out = Vec::new();
    for path in flatten_uses(code).into_iter().chain(inline_paths(code)) {
        let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = match segs.first().copied() {
            Some("crate") => Vec::new(),
            Some("super") | Some("self") => module.clone(),
            _ => continue,
        };
        while let Some(first) = segs.first().copied() {
            match first {
                "crate" => {}
                "self" => {}
                "super" => {
                    base.pop();
                }
                _ => break,
            }
            segs.remove(0);
        }
        base.extend(segs.iter().map(|s| s.to_string()));
        out.push(base);
    }
    out
}

/// The paths of every `use` item, with brace groups expanded.
pub(super) fn flatten_uses(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut item: Option<String> = None;
    for line in code.lines() {
        let t = line.trim();
        let start = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| t.strip_prefix(p));
        match (&mut item, start) {
            (None, Some(rest)) => item = Some(rest.to_string()),
            (Some(acc), _) => {
                acc.push(' ');
                acc.push_str(t);
            }
            (None, None) => continue,
        }
        if let Some(done) = item.take_if(|acc| acc.ends_with(';')) {
            expand("", done.trim_end_matches(';'), &mut out);
        }
    }
    out
}

fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    match tree.find('{') {
        None => out.push(format!(
            "{prefix}{}",
            tree.split(" as ").next().unwrap().trim()
        )),
        Some(open) => {
            let head = tree[..open].trim();
            let inner = &tree[open + 1..tree.rfind('}').unwrap()];
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&format!("{prefix}{head}"), &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            if !inner[start..].trim().is_empty() {
                expand(&format!("{prefix}{head}"), &inner[start..], out);
            }
        }
    }
}

/// Paths named inline in code, like `crate::domain::rules::create(..)`.
pub(super) fn inline_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("use ")) {
        for start in ["crate::", "super::"] {
            let mut rest = line;
            while let Some(i) = rest.find(start) {
                let tail = &rest[i..];
                let end = tail
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(tail.len());
                out.push(tail[..end].trim_end_matches(':').to_string());
                rest = &tail[end..];
            }
        }
    }
    out
}

/// The file a module path lives in: the longest prefix that is a file of the crate.
fn file_of(path: &[String], files: &BTreeMap<Vec<String>, PathBuf>) -> Option<PathBuf> {
    (0..=path.len())
        .rev()
        .find_map(|n| files.get(&path[..n].to_vec()).cloned())
}

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let mut wrong = Vec::new();
    for file in rust_files(&root().join("src")) {
        let module = module_of(&file);
        let Some((layer, allowed)) = LAYERS
            .iter()
            .find(|(l, _)| module.first().map(String::as_str) == Some(*l))
        else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for path in referenced_paths(&file, production_code(&text)) {
            let Some(target) = path.first() else { continue };
            if target != layer && !allowed.contains(&target.as_str()) {
                wrong.push(format!(
                    "{}: {layer} imports {}",
                    file.display(),
                    path.join("::")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_import_cycle_between_files() {
    let files: BTreeMap<Vec<String>, PathBuf> = rust_files(&root().join("src"))
        .into_iter()
        .filter(|f| !f.ends_with("main.rs"))
        .map(|f| (module_of(&f), f))
        .collect();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in files.values() {
        let text = std::fs::read_to_string(file).unwrap();
        let targets = referenced_paths(file, production_code(&text))
            .iter()
            .filter_map(|p| file_of(p, &files))
            .filter(|t| t != file)
            .collect();
        edges.insert(file.clone(), targets);
    }
    let cycle = cycle_in(&edges).unwrap_or_default();
    let names: Vec<String> = cycle
        .iter()
        .map(|p| p.strip_prefix(root()).unwrap().display().to_string())
        .collect();
    assert!(names.is_empty(), "import cycle: {}", names.join(" -> "));
}

/// A cycle of `edges` (each node and the nodes it imports), if there is one: a depth-first
/// search for a back edge.
pub(super) fn cycle_in<T: Ord + Clone>(edges: &BTreeMap<T, BTreeSet<T>>) -> Option<Vec<T>> {
    fn visit<T: Ord + Clone>(
        node: &T,
        edges: &BTreeMap<T, BTreeSet<T>>,
        stack: &mut Vec<T>,
        done: &mut BTreeSet<T>,
    ) -> Option<Vec<T>> {
        if let Some(i) = stack.iter().position(|n| n == node) {
            return Some(stack[i..].to_vec());
        }
        if !done.insert(node.clone()) {
            return None;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

/// (first line, length) of every function with a body, by rustfmt's layout: the body ends
/// at the first `}` line at the `fn` line's indentation.
fn functions(text: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let is_fn = [
            "fn ",
            "pub fn ",
            "async fn ",
            "pub async fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "pub(crate) async fn ",
            "pub(super) async fn ",
            "const fn ",
            "pub const fn ",
        ]
        .iter()
        .any(|p| t.starts_with(p));
        if !is_fn {
            continue;
        }
        let indent = &line[..line.len() - t.len()];
        let opens = lines[i..].iter().position(|l| l.trim_end().ends_with('{'));
        let ends_decl = lines[i..].iter().position(|l| l.trim_end().ends_with(';'));
        let Some(open) = opens else { continue };
        if ends_decl.is_some_and(|d| d < open) {
            continue; // a declaration without a body
        }
        let close = lines[i + open..]
            .iter()
            .position(|l| *l == format!("{indent}}}"))
            .map(|c| i + open + c);
        if let Some(close) = close {
            let name = t
                .split("fn ")
                .nth(1)
                .unwrap_or("")
                .split(['(', '<'])
                .next()
                .unwrap();
            out.push((i + 1, close - i + 1, name.to_string()));
        }
    }
    out
}

#[test]
fn files_and_functions_are_small_enough_to_read() {
    let mut too_big = Vec::new();
    for dir in ["src", "tests", "benches", "examples"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            let rel = file.strip_prefix(root()).unwrap().display().to_string();
            let n = text.lines().count();
            if n > MAX_FILE_LINES {
                too_big.push(format!("{rel}: {n} lines (at most {MAX_FILE_LINES})"));
            }
            for (line, len, name) in functions(&text) {
                if len > MAX_FN_LINES {
                    too_big.push(format!(
                        "{rel}:{line}: fn {name} is {len} lines (at most {MAX_FN_LINES})"
                    ));
                }
            }
        }
    }
    assert!(too_big.is_empty(), "{}", too_big.join("\n"));
}

#[test]
fn the_checks_see_what_they_check() {
    // The function finder and the import reader work on a known sample.
    let sample = "use crate::store::{PgStore, mongo::MongoProjection};\n\
                  fn a() {\n    let x = 1;\n}\n\
                  pub async fn b(\n    y: u8,\n) -> u8 {\n    crate::domain::rules::create(y)\n}\n";
    let fns = functions(sample);
    assert_eq!(fns, [(2, 3, "a".to_string()), (5, 5, "b".to_string())]);
    let paths = referenced_paths(&root().join("src/usecases/x.rs"), sample);
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert!(joined.contains(&"store::PgStore".to_string()), "{joined:?}");
    assert!(
        joined.contains(&"store::mongo::MongoProjection".to_string()),
        "{joined:?}"
    );
    assert!(
        joined.contains(&"domain::rules::create".to_string()),
        "{joined:?}"
    );
    let sup = referenced_paths(
        &root().join("src/store/pg.rs"),
        "use super::error::StoreError;",
    );
    assert_eq!(
        sup,
        [vec![
            "store".to_string(),
            "error".into(),
            "StoreError".into()
        ]]
    );
}
