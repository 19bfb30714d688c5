//! Embedding Strata's MCP server in a host: the facts of each call come from the host (an
//! in-memory base per repository, picked by a `repo` argument the host adds to every
//! tool), and the vocabulary is the host's too, resolved on the first call that needs it.
//!
//! `cargo run -p strata-mcp --example embed` prints the answers of a few `query` calls
//! made through [`Server::call`], as an MCP client's `tools/call` would make them.

use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use rmcp::model::JsonObject;
use strata_eval::Cancel;
use strata_eval::{MemorySource, Value, Vocabulary};
use strata_mcp::{
    CallContext, Example, HostArguments, HostError, Pack, Run, Server, Source, ToolOutput,
};
use strata_store::{OpenOptions, Store};

/// A module the host's vocabulary adds to the base relations.
pub const DEPS: &str = "\
# Everything a package depends on, directly or through others.
depends_on(?a, ?b) :- imports(?a, ?b);
depends_on(?a, ?c) :- depends_on(?a, ?b), imports(?b, ?c);
";

/// One repository's facts, in memory: what each package imports.
pub fn repo(edges: &[(&str, &str)]) -> Result<MemorySource, Box<dyn Error>> {
    let mut m = MemorySource::new();
    m.add_relation("imports", &["importer", "imported"]);
    for (a, b) in edges {
        m.insert("imports", &[Value::text(*a), Value::text(*b)])?;
    }
    Ok(m)
}

/// The server: a `repo` argument on every tool picks the base of the call (`app` when
/// left out), over a store in `dir` the host does not read.
pub fn server(dir: &Path) -> Result<Server, Box<dyn Error>> {
    let app: Source = Arc::new(repo(&[("app", "api"), ("api", "log"), ("api", "db")])?);
    let tools: Source = Arc::new(repo(&[("cli", "flags"), ("flags", "log")])?);
    // Both repositories hold the same relations: the vocabulary is read from one.
    let relations = app.relations()?;

    let mut properties = JsonObject::new();
    properties.insert(
        "repo".to_owned(),
        serde_json::json!({
            "type": "string",
            "description": "The repository to read: app (the default) or tools."
        }),
    );
    let prepare = move |call: &CallContext| -> Result<Run, HostError> {
        let base = match call.host_args.get("repo").and_then(|v| v.as_str()) {
            None | Some("app") => app.clone(),
            Some("tools") => tools.clone(),
            Some(other) => {
                return Err(format!("no repository \"{other}\"; give app or tools").into());
            }
        };
        Ok(Run {
            base: Some(base),
            ..Run::default()
        })
    };

    let pack = Pack {
        name: "repos".to_owned(),
        about: "the packages of two repositories and what each imports".to_owned(),
        examples: vec![Example {
            question: "what does app depend on?".to_owned(),
            program: r#"deps.depends_on("app", ?d) => ?d"#.to_owned(),
        }],
        hint: String::new(),
        ..Pack::default()
    };
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )?;
    let server = Server::builder(store, pack)
        .limit(50)
        .vocabulary(move || {
            Ok(Vocabulary::from_sources(
                relations.clone(),
                &[("deps", DEPS)],
            )?)
        })
        .arguments(HostArguments::new(properties, prepare))
        .build()?;
    Ok(server)
}

/// Calls `query` with `arguments` (a JSON object).
pub fn query(server: &Server, arguments: serde_json::Value) -> Result<ToolOutput, Box<dyn Error>> {
    let arguments = arguments.as_object().cloned();
    server
        .call("query", arguments, &Cancel::new())
        .ok_or_else(|| "the server has no query tool".into())
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let server = server(dir.path())?;
    let calls = [
        serde_json::json!({ "program": r#"deps.depends_on("app", ?d) => ?d"# }),
        serde_json::json!({ "repo": "tools", "program": "imports(?a, ?b) => ?a, ?b" }),
        serde_json::json!({ "repo": "web", "program": "imports(?a, ?b) => ?b" }),
    ];
    for args in calls {
        println!("> query {args}");
        let out = query(&server, args)?;
        if out.is_error {
            println!("tool error: {}\n", out.text);
        } else {
            println!("{}\n", out.text);
        }
    }
    Ok(())
}
