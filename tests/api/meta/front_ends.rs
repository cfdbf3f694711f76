//! The two front ends over the use cases, the JSON API (`http`) and the console
//! (`console`), do not import each other: what both need lives in `web`, below both
//! (`docs/architecture.md`). Read from the sources, test modules included.

use std::path::Path;

use super::architecture::{module_of, referenced_paths, root, rust_files};

const FRONT_ENDS: [&str; 2] = ["http", "console"];

/// What `file` (with source `text`) names of the other front end, if it is one of them.
fn crossings(file: &Path, text: &str) -> Vec<String> {
    let module = module_of(file);
    let Some(own) = module.first().filter(|m| FRONT_ENDS.contains(&m.as_str())) else {
        return Vec::new();
    };
    referenced_paths(file, text)
        .into_iter()
        .filter(|p| {
            p.first()
                .is_some_and(|t| t != own && FRONT_ENDS.contains(&t.as_str()))
        })
        .map(|p| format!("{}: imports {}", file.display(), p.join("::")))
        .collect()
}

#[test]
fn the_json_api_and_the_console_do_not_import_each_other() {
    let mut wrong = Vec::new();
    for file in rust_files(&root().join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        wrong.extend(crossings(&file, &text));
    }
    assert!(
        wrong.is_empty(),
        "the JSON API and the console import each other:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_sees_either_front_end_import_the_other() {
    let console = root().join("src/console/x.rs");
    let http = root().join("src/http/x.rs");
    let web = root().join("src/web/x.rs");
    let named = "fn f() {\n    crate::http::documents::create();\n}\n";
    assert_eq!(crossings(&console, named).len(), 1);
    assert_eq!(crossings(&http, "use crate::console::PATHS;").len(), 1);
    assert!(crossings(&http, "use crate::web::auth::Caller;").is_empty());
    assert!(
        crossings(&web, "use crate::usecases::Context;").is_empty(),
        "web is no front end"
    );
}
