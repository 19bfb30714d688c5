//! `strata cypher DB QUERY`: a Cypher read query compiled to a program over the graph the
//! dumps and the pack's `[cypher]` give, run as `strata query` runs a program.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use super::{ProgramError, binds, duration, open, vocabulary};

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
    /// The most rows to answer.
    #[arg(long, default_value_t = 100)]
    limit: u64,
    /// Continue from this page token (the offset the last page gave).
    #[arg(long)]
    page_token: Option<String>,
    /// The most work (candidate tuples examined) the evaluation may spend.
    #[arg(long)]
    max_work: Option<u64>,
    /// The longest the evaluation may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "30s")]
    timeout: String,
    /// Answer as JSON: the Cypher text, the program, columns, rows, witnesses, total, next.
    #[arg(long)]
    json: bool,
    /// Leave out the witnesses.
    #[arg(long)]
    no_witnesses: bool,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// A try: answer at most this many rows, and when none come back, say which literal
    /// matched nothing.
    #[arg(long)]
    sample: Option<u64>,
}

pub(crate) fn cypher(args: &CypherArgs) -> Result<()> {
    use strata_eval::cypher::{self, Graph};
    use strata_eval::query::RunOptions;
    let store = open(&args.db)?;
    let vocab = vocabulary(&store)?;
    let pack = strata_mcp::Pack::load(&args.db)?;
    let graph = Graph::derive(&vocab, &pack.cypher.mapping()).map_err(ProgramError)?;
    let params = binds(&args.params)?;
    let q = cypher::prepare(&vocab, &graph, &args.query, &params)
        .map_err(|e| ProgramError(e.to_string()))?;
    let tiers = store.tiers_for(q.base_relations())?;
    let tiers: Vec<&str> = tiers.iter().map(String::as_str).collect();
    let snap = store.snapshot_with_tiers(&tiers)?;
    let mut options = RunOptions {
        offset: match &args.page_token {
            Some(t) => t.parse().with_context(|| {
                format!("--page-token {t}: a page token is the number the last page gave")
            })?,
            None => 0,
        },
        limit: args.sample.map_or(args.limit, |s| s.min(args.limit)),
        why: args.sample.is_some(),
        ..RunOptions::default()
    };
    options.engine.witnesses = !args.no_witnesses;
    options.engine.max_work = args.max_work;
    options.engine.timeout = Some(duration(&args.timeout)?);
    if let Some(t) = args.threads {
        options.engine.threads = t.max(1);
    }
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
