//! `strata hook install` and `strata hook uninstall`: a git `post-commit` hook that runs a
//! SCIP indexer over the repository after every commit and ingests the index it writes with
//! `--replace --label commit=SHA`, so the database follows the repository and every answer's
//! snapshot names the commit it reflects. The index is removed before the indexer runs, and
//! a missing or empty index after it is refused with a message: nothing is ingested.
//!
//! The hook is a small `sh` script marked as this command's ([`MARKER`]): installing over it
//! again rewrites it; a hook of anybody else's is refused unless `--force`, which keeps it as
//! `post-commit.before-strata`, and `uninstall` puts that one back.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};

/// The line that marks a hook as written by `strata hook install`.
pub(crate) const MARKER: &str = "# strata-hook: written by `strata hook install`";

/// Where a foreign hook goes when `--force` replaces it.
const BACKUP: &str = "post-commit.before-strata";

#[derive(Subcommand)]
pub(crate) enum HookCommand {
    /// Write `.git/hooks/post-commit`: after every commit, run the indexer, then
    /// `strata ingest DB INDEX --replace --label commit=SHA`.
    Install(InstallArgs),
    /// Remove the hook `install` wrote (and put back the one it replaced, if any).
    Uninstall(UninstallArgs),
}

#[derive(Args)]
pub(crate) struct InstallArgs {
    /// The database directory the hook ingests into (created by the first ingest).
    pub(crate) db: PathBuf,
    /// The command that writes the SCIP index, run by `sh` at the repository's top level:
    /// `scip-typescript index`, `scip-python index . --project-version=dev`,
    /// `rust-analyzer scip .`, ...
    #[arg(long)]
    pub(crate) indexer: String,
    /// The git repository (any folder inside it).
    #[arg(long, default_value = ".")]
    pub(crate) repo_dir: PathBuf,
    /// The index the indexer writes, relative to the repository's top level.
    #[arg(long, default_value = "index.scip")]
    pub(crate) index: PathBuf,
    /// The repository's name in the database (`--repo` of `strata ingest`); by default the
    /// last segment of the index's project root.
    #[arg(long, value_name = "NAME")]
    pub(crate) repo: Option<String>,
    /// Run the indexer and the ingest in the background, so `git commit` returns at once;
    /// their output goes to `.git/strata-hook.log`.
    #[arg(long)]
    pub(crate) background: bool,
    /// Replace a post-commit hook that `strata hook install` did not write (it is kept as
    /// `post-commit.before-strata`).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args)]
pub(crate) struct UninstallArgs {
    /// The git repository (any folder inside it).
    #[arg(long, default_value = ".")]
    pub(crate) repo_dir: PathBuf,
}

pub(crate) fn hook(command: &HookCommand) -> Result<()> {
    match command {
        HookCommand::Install(args) => install(args),
        HookCommand::Uninstall(args) => uninstall(&args.repo_dir),
    }
}

/// The repository's hooks folder, as git resolves it (`core.hooksPath`, worktrees).
fn hooks_dir(repo_dir: &Path) -> Result<PathBuf> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo_dir)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .output()
        .context("running git (the hook needs it on PATH)")?;
    if !out.status.success() {
        bail!(
            "{}: not inside a git repository: {}",
            repo_dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// `s` quoted for `sh`, as one word.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn path_word(p: &Path) -> Result<String> {
    match p.to_str() {
        Some(s) => Ok(quote(s)),
        None => bail!("{}: the hook needs a path that is valid UTF-8", p.display()),
    }
}

/// The hook's script.
pub(crate) fn script(strata: &Path, db: &Path, args: &InstallArgs) -> Result<String> {
    if args.indexer.trim().is_empty() {
        bail!(
            "--indexer is empty: name the command that writes the index, e.g. 'scip-typescript index'"
        );
    }
    if args.indexer.contains('\n') {
        bail!("--indexer is one command line; put several in a script and name that");
    }
    let repo = match &args.repo {
        Some(r) => format!(" --repo {}", quote(r)),
        None => String::new(),
    };
    let indexer = &args.indexer;
    let ingest =
        format!("\"$STRATA\" ingest \"$DB\" \"$INDEX\" --replace --label \"commit=$commit\"{repo}");
    // The index of an earlier commit never stands in for this one's, and an indexer that
    // wrote nothing never makes an empty index replace the repository (the ingest refuses an
    // index with no documents too: one of only metadata).
    let fresh = "rm -f -- \"$INDEX\"";
    let check = "[ -s \"$INDEX\" ] || { echo \"strata hook: the indexer wrote no index at \
                 $INDEX (missing or empty); nothing ingested\" >&2; exit 1; }";
    let body = if args.background {
        format!(
            "(\n  set -e\n  {fresh}\n  {indexer}\n  {check}\n  {ingest}\n) \
             >>\"$(git rev-parse --git-dir)/strata-hook.log\" 2>&1 </dev/null &\n"
        )
    } else {
        format!("{fresh}\n{indexer}\n{check}\n{ingest}\n")
    };
    Ok(format!(
        "#!/bin/sh\n\
         {MARKER}\n\
         # After every commit: re-index the repository and ingest the index into the Strata\n\
         # database, labelled with the commit, so every answer's snapshot names it.\n\
         # Remove with `strata hook uninstall`.\n\
         set -e\n\
         cd \"$(git rev-parse --show-toplevel)\"\n\
         STRATA={strata}\n\
         DB={db}\n\
         INDEX={index}\n\
         commit=$(git rev-parse HEAD)\n\
         {body}",
        strata = path_word(strata)?,
        db = path_word(db)?,
        index = path_word(&args.index)?,
    ))
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("{}: cannot make it absolute", p.display()))
}

fn is_ours(path: &Path) -> Result<Option<bool>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(
            String::from_utf8_lossy(&bytes).lines().any(|l| l == MARKER),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn install(args: &InstallArgs) -> Result<()> {
    let hooks = hooks_dir(&args.repo_dir)?;
    let strata = std::env::current_exe().context("finding the strata executable")?;
    let text = script(&strata, &absolute(&args.db)?, args)?;
    std::fs::create_dir_all(&hooks).with_context(|| format!("creating {}", hooks.display()))?;
    let hook = hooks.join("post-commit");
    match is_ours(&hook)? {
        Some(false) if !args.force => bail!(
            "{}: a post-commit hook is there already, not written by strata; merge the two by \
             hand, or pass --force to replace it (it is kept as {BACKUP})",
            hook.display()
        ),
        Some(false) => {
            let backup = hooks.join(BACKUP);
            std::fs::rename(&hook, &backup)
                .with_context(|| format!("moving {} to {}", hook.display(), backup.display()))?;
            say!("kept the previous hook as {}", backup.display())?;
        }
        Some(true) | None => {}
    }
    std::fs::write(&hook, text).with_context(|| format!("writing {}", hook.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", hook.display()))?;
    }
    say!(
        "wrote {}: after every commit it runs `{}` and ingests {} into {}",
        hook.display(),
        args.indexer,
        args.index.display(),
        args.db.display()
    )?;
    Ok(())
}

fn uninstall(repo_dir: &Path) -> Result<()> {
    let hooks = hooks_dir(repo_dir)?;
    let hook = hooks.join("post-commit");
    match is_ours(&hook)? {
        None => {
            say!("no post-commit hook in {}", hooks.display())?;
            return Ok(());
        }
        Some(false) => bail!(
            "{}: this post-commit hook was not written by strata; left alone",
            hook.display()
        ),
        Some(true) => {}
    }
    std::fs::remove_file(&hook).with_context(|| format!("removing {}", hook.display()))?;
    let backup = hooks.join(BACKUP);
    if backup.exists() {
        std::fs::rename(&backup, &hook)
            .with_context(|| format!("restoring {}", backup.display()))?;
        say!("removed the strata hook; restored the previous one from {BACKUP}")?;
    } else {
        say!("removed {}", hook.display())?;
    }
    Ok(())
}
