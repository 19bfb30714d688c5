//! `strata query`, `strata explain` and `strata schema`: a program run over the database
//! (its rows with witnesses, or where its work went), and the relations and modules a
//! program may use; with the `--bind` flags and the database's vocabulary they share.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use strata_store::Store;

use super::{ProgramError, duration, open};

#[derive(Args)]
pub(crate) struct QueryArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// The program, e.g. 'deps.depends_on("app", ?d) => ?d'.
    pub(crate) program: String,
    /// Give a variable a value, as var=value (repeat a variable for a list of values). A
    /// value that reads as JSON (42, "42", ["a","b"]) is taken as such; anything else is text.
    #[arg(long = "bind", value_name = "VAR=VALUE")]
    pub(crate) binds: Vec<String>,
    /// Answer as JSON: columns, rows, witnesses, total, next page token, snapshot.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) run: RunFlags,
}

/// The flags `strata query`, `explain` and `cypher` share: the page and the evaluation's
/// limits.
#[derive(Args)]
pub(crate) struct RunFlags {
    /// The most rows to answer.
    #[arg(long, default_value_t = 100)]
    pub(crate) limit: u64,
    /// Continue from this page token (the offset the last page gave).
    #[arg(long)]
    pub(crate) page_token: Option<String>,
    /// The most work (candidate tuples examined) the evaluation may spend.
    #[arg(long)]
    pub(crate) max_work: Option<u64>,
    /// The longest the evaluation may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "30s")]
    pub(crate) timeout: String,
    /// Leave out the witnesses (faster on large answers).
    #[arg(long)]
    pub(crate) no_witnesses: bool,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// A try: answer at most this many rows, and when none come back, say which literal
    /// matched nothing.
    #[arg(long)]
    pub(crate) sample: Option<u64>,
}

impl RunFlags {
    /// The engine's run options these flags ask for.
    pub(crate) fn options(&self) -> Result<strata_eval::query::RunOptions> {
        let offset = match &self.page_token {
            Some(t) => t.parse().with_context(|| {
                format!("--page-token {t}: a page token is the number the last page gave")
            })?,
            None => 0,
        };
        let mut options = strata_eval::query::RunOptions {
            offset,
            limit: self.sample.map_or(self.limit, |s| s.min(self.limit)),
            why: self.sample.is_some(),
            ..strata_eval::query::RunOptions::default()
        };
        options.engine.witnesses = !self.no_witnesses;
        options.engine.max_work = self.max_work;
        options.engine.timeout = Some(duration(&self.timeout)?);
        if let Some(t) = self.threads {
            options.engine.threads = t.max(1);
        }
        Ok(options)
    }
}

/// A snapshot of `store` with exactly the tiers holding `relations` open (the default
/// BaseFor).
pub(crate) fn snapshot_for(store: &Store, relations: &[String]) -> Result<strata_store::Snapshot> {
    let tiers = store.tiers_for(relations)?;
    let tiers: Vec<&str> = tiers.iter().map(String::as_str).collect();
    Ok(store.snapshot_with_tiers(&tiers)?)
}

pub(crate) fn bind_value(raw: &str) -> strata_eval::Value {
    use strata_eval::Value;
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::String(s)) => Value::Text(s),
        Ok(serde_json::Value::Number(n)) => {
            n.as_f64().map_or_else(|| Value::text(raw), Value::Number)
        }
        _ => Value::from_field(raw),
    }
}

/// Turns `--bind var=value` flags into binds: a repeated variable, or a JSON array, is a list.
pub(crate) fn binds(flags: &[String]) -> Result<Vec<(String, strata_eval::Bind)>> {
    use strata_eval::Bind;
    let mut out: Vec<(String, Vec<strata_eval::Value>, bool)> = Vec::new();
    for f in flags {
        let Some((var, raw)) = f.split_once('=') else {
            bail!("--bind {f}: write var=value, e.g. --bind from=app");
        };
        let var = var.trim_start_matches('?').to_owned();
        let (values, list) = match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(serde_json::Value::Array(items)) => (
                items
                    .iter()
                    .map(|i| bind_value(&i.to_string()))
                    .collect::<Vec<_>>(),
                true,
            ),
            _ => (vec![bind_value(raw)], false),
        };
        match out.iter_mut().find(|(v, _, _)| *v == var) {
            Some((_, vs, l)) => {
                vs.extend(values);
                *l = true;
            }
            None => out.push((var, values, list)),
        }
    }
    Ok(out
        .into_iter()
        .map(|(var, mut vs, list)| {
            let bind = if list || vs.len() != 1 {
                Bind::List(vs)
            } else {
                Bind::One(vs.remove(0))
            };
            (var, bind)
        })
        .collect())
}

/// The vocabulary of a database: its catalog (no tier is opened) and its `modules/` folder.
pub(crate) fn vocabulary(store: &Store) -> Result<strata_eval::Vocabulary> {
    let snap = store.snapshot()?;
    let modules = store.dir().join("modules");
    let dir = modules.is_dir().then_some(modules.as_path());
    Ok(strata_eval::Vocabulary::load(&snap, dir)?)
}

pub(crate) fn query(args: &QueryArgs, explain: bool) -> Result<()> {
    use strata_eval::query::{Query, QueryError};
    let store = open(&args.db)?;
    let vocab = vocabulary(&store)?;
    let q = match Query::prepare(&vocab, &args.program, &binds(&args.binds)?) {
        Ok(q) => q,
        Err(QueryError::Program(text)) => return Err(ProgramError(text.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    // BaseFor: open exactly the tiers holding the relations the program reads.
    let snap = snapshot_for(&store, q.base_relations())?;
    let options = args.run.options()?;
    if explain {
        let mut report = q.explain(&snap, &options)?;
        report.tiers = store.opened_tiers();
        if args.json {
            let mut j = report.json();
            j["snapshot"] = serde_json::json!({ "seq": snap.seq() });
            say!("{}", serde_json::to_string_pretty(&j)?)?;
        } else {
            say!("{}", report.text())?;
        }
        return Ok(());
    }
    let out = q.run(&snap, &options)?;
    if args.json {
        let mut j = out.answer.json();
        let last = snap.last_batch();
        j["snapshot"] = serde_json::json!({
            "seq": snap.seq(),
            "labels": last.map(|b| b.labels.clone()).unwrap_or_default(),
        });
        j["work"] = out.work.into();
        j["tiers"] = serde_json::json!(store.opened_tiers());
        if let Some(why) = &out.why {
            j["why"] = format!("{why} matched nothing").into();
        }
        say!("{}", serde_json::to_string_pretty(&j)?)?;
    } else {
        say!("{}", out.answer.text())?;
        if let Some(why) = &out.why {
            say!("why: {why} matched nothing")?;
        }
    }
    Ok(())
}

pub(crate) fn schema(db: &Path, path: Option<&str>) -> Result<()> {
    let store = open(db)?;
    let vocab = vocabulary(&store)?;
    let text = match path {
        None => strata_eval::schema::card(&vocab),
        Some("cypher") if strata_eval::schema::describe(&vocab, "cypher").is_none() => {
            let pack = strata_mcp::Pack::load(db)?;
            strata_eval::cypher::Graph::derive(&vocab, &pack.cypher.mapping())
                .map_err(ProgramError)?
                .describe()
        }
        Some(p) => strata_eval::schema::describe(&vocab, p).with_context(|| {
            format!("schema: nothing is named \"{p}\"; run `strata schema DB` for every relation and module")
        })?,
    };
    say!("{text}")?;
    Ok(())
}
