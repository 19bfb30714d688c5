//! `strata demo`: the bundled example database built, then shown through the other
//! commands (ingest, stats, check, query, schema).

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::batch::{BatchArgs, IngestArgs, ingest};
use super::query::{LimitFlags, QueryArgs, RunFlags, query, schema};
use super::{check, stats};

pub(crate) fn demo(dir: Option<PathBuf>) -> Result<()> {
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("strata-demo"));
    if dir.join(strata_app::BASE_FILE).exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot clear the old demo database {}", dir.display()))?;
    }
    let files = strata_fixtures::example::write_example(&dir)
        .with_context(|| format!("cannot write the example into {}", dir.display()))?;
    let args = IngestArgs {
        db: dir.clone(),
        files,
        tier: "default".to_owned(),
        format: None,
        relation: None,
        unit: None,
        repo: None,
        checkout: None,
        replace: false,
        allow_empty: false,
        buffer: strata_app::BUFFER_FACTS,
        indexes: Vec::new(),
        batch: BatchArgs {
            labels: vec!["source=strata-demo".to_owned()],
            batch_id: None,
        },
    };
    say!("$ strata ingest {} <the example's dumps>", dir.display())?;
    ingest(&args)?;
    say!("\n$ strata stats {}", dir.display())?;
    stats(&dir, false)?;
    say!("\n$ strata check {}", dir.display())?;
    check(&dir)?;
    let program = strata_fixtures::example::SEED_QUESTION;
    say!("\n$ strata query {} '{program}' --limit 2", dir.display())?;
    query(
        &QueryArgs {
            db: dir.clone(),
            program: program.to_owned(),
            binds: Vec::new(),
            json: false,
            run: RunFlags {
                limits: LimitFlags {
                    limit: 2,
                    max_work: None,
                    timeout: "30s".to_owned(),
                },
                page_token: None,
                no_witnesses: false,
                threads: None,
                sample: None,
                max_bytes: None,
                witness_row: None,
                max_memory: None,
                cache: None,
                context: 0,
            },
        },
        false,
    )?;
    say!("\n$ strata schema {} deps", dir.display())?;
    schema(&dir, Some("deps"))
}
