//! The test table of `docs/development.md` ("Tests") against the real test folders: one row
//! per folder of `tests/api/` (the shared `support/` aside), each file it names present in
//! that folder, and each folder said to run where the Makefile runs it (the folders the
//! Makefile gives a run of their own, by module path, in that run's make target; every
//! other folder in the parallel run of `make test`). A folder added, renamed or moved to
//! another run without the table following fails here.

use std::collections::BTreeMap;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap()
}

/// The table's rows: folder -> (what the row says, where it says it runs).
fn table() -> BTreeMap<String, (String, String)> {
    let page = read("docs/development.md");
    let from = page
        .find("\n## Tests\n")
        .expect("development.md has a Tests section");
    let section = &page[from..from + page[from + 1..].find("\n## ").unwrap()];
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `tests/api/")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 3, "a row of three cells: {line}");
        let folder = cells[0].trim_matches('`').trim_start_matches("tests/api/");
        let folder = folder.trim_end_matches('/').to_string();
        rows.insert(folder, (cells[1].to_string(), cells[2].to_string()));
    }
    rows
}

/// The folders of `tests/api/` that hold tests.
fn folders() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("tests/api"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "support")
        .collect();
    found.sort();
    found
}

/// The runs the Makefile gives folders of their own: module path -> make target.
fn runs_of_their_own() -> BTreeMap<String, String> {
    let makefile = read("Makefile");
    let mut runs = BTreeMap::new();
    for (variable, target) in [
        ("VOLUME_TESTS", "make test-volume"),
        ("TOPOLOGY_TESTS", "make test-topologies"),
        ("UI_TESTS", "make test-ui"),
    ] {
        let line = makefile
            .lines()
            .find(|l| l.starts_with(&format!("{variable} :=")))
            .unwrap_or_else(|| panic!("the Makefile sets {variable}"));
        for module in line.split(":=").nth(1).unwrap().split_whitespace() {
            runs.insert(
                module.trim_end_matches("::").to_string(),
                target.to_string(),
            );
        }
    }
    runs
}

#[test]
fn the_test_table_of_development_md_lists_every_test_folder_and_its_run() {
    let rows = table();
    let folders = folders();
    assert_eq!(
        rows.keys().cloned().collect::<Vec<_>>(),
        folders,
        "docs/development.md's test table has one row per folder of tests/api/"
    );
    let own = runs_of_their_own();
    for (folder, (what, run)) in &rows {
        for file in what
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|f| f.ends_with(".rs"))
        {
            let path = Path::new(ROOT).join("tests/api").join(folder).join(file);
            assert!(
                path.is_file(),
                "the row of {folder}/ names {file}, not in that folder"
            );
        }
        match own.get(folder) {
            Some(target) => assert!(
                run.contains(target.as_str()),
                "{folder}/ runs in `{target}`, its row says: {run}"
            ),
            None => assert!(
                run.contains("`make test`, in parallel"),
                "{folder}/ runs in make test's parallel run, its row says: {run}"
            ),
        }
    }
}
