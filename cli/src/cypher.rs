//! `strata cypher DB QUERY`: a Cypher read query compiled to a program over the graph the
//! dumps and the pack's `[cypher]` give, run as `strata query` runs a program.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::query::{RunFlags, snapshot_for};
use super::{ProgramError, binds, open, vocabulary};

#[derive(Args)]
pub(crate) struct CypherArgs {
    /// The database directory.
    db: PathBuf,
    /// The query, e.g. 'MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name'.
    query: String,
    /// Give a $parameter a value, as name=value (repeat a name, or give a JSON array, for a
    /// list). A value that reads as JSON (42, "42") is taken as such; anything else is text.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Answer as JSON: the Cypher text, the program, columns, rows, witnesses, total, next.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    run: RunFlags,
}

pub(crate) fn cypher(args: &CypherArgs) -> Result<()> {
    use strata_eval::cypher::{self, Graph};
    let store = open(&args.db)?;
    let vocab = vocabulary(&store)?;
    let pack = strata_mcp::Pack::load(&args.db)?;
    let graph = Graph::derive(&vocab, &pack.cypher.mapping()).map_err(ProgramError)?;
    let params = binds(&args.params)?;
    let q = cypher::prepare(&vocab, &graph, &args.query, &params)
        .map_err(|e| ProgramError(e.to_string()))?;
    let snap = snapshot_for(&store, q.base_relations())?;
    let options = args.run.options()?;
    let out = q
        .run(&snap, &options)
        .map_err(|e| ProgramError(e.to_string()))?;
    if args.json {
        let mut j = q.json(&out);
        j["snapshot"] = serde_json::json!({ "seq": snap.seq() });
        j["work"] = out.work.into();
        if let Some(why) = &out.why {
            j["why"] = format!("{why} matched nothing").into();
        }
        say!("{}", serde_json::to_string_pretty(&j)?)?;
    } else {
        say!("{}", q.text(&out))?;
        if let Some(why) = &out.why {
            say!("why: {why} matched nothing")?;
        }
    }
    Ok(())
}
