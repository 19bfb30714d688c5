//! DuckDB through its Python package: finding (or installing) a Python that imports
//! `duckdb`, and the scripts the side-by-side suite runs with it: a recursive query over a
//! TSV file read with `read_csv`, and a load of TSV files into tables of a `.duckdb` file.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::data_root;

/// Where the suite installs DuckDB when `python3` does not import it: a virtualenv under
/// the bench data directory (`target/bench-data/duckdb-venv`, shared with `scale-bench`).
pub fn venv_dir() -> PathBuf {
    data_root().join("duckdb-venv")
}

fn imports_duckdb(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A Python that imports `duckdb`: `python3` itself, else the suite's virtualenv; when
/// neither does and `install` is set, the virtualenv is made and DuckDB installed into it
/// from PyPI (`pip install duckdb`). `Err` says why there is none.
pub fn python(install: bool) -> Result<PathBuf, String> {
    let system = PathBuf::from("python3");
    if imports_duckdb(&system) {
        return Ok(system);
    }
    let venv = venv_dir();
    let py = venv.join("bin/python");
    if py.exists() && imports_duckdb(&py) {
        return Ok(py);
    }
    if !install {
        return Err(format!(
            "python3 does not import duckdb and {} has no DuckDB (installing is off)",
            venv.display()
        ));
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return Err("python3 -m venv failed (is python3 with venv installed?)".to_owned());
    }
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "duckdb"])
        .status()
        .is_ok_and(|s| s.success());
    if !installed || !imports_duckdb(&py) {
        return Err("could not install duckdb from PyPI into the virtualenv".to_owned());
    }
    Ok(py)
}

/// The version of DuckDB `python` imports, or `?`.
pub fn version(python: &Path) -> String {
    Command::new(python)
        .args(["-c", "import duckdb; print(duckdb.__version__)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(
            || "?".to_owned(),
            |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
        )
}

/// A table of TSV columns: its name, the file, and each column's name and SQL type.
#[derive(Clone, Debug)]
pub struct Table {
    /// The table's name.
    pub name: String,
    /// The TSV file it is read from (no header, no quoting).
    pub file: PathBuf,
    /// Each column: name and type (`INTEGER`, `VARCHAR`).
    pub columns: Vec<(String, String)>,
    /// The columns a load builds an index on (DuckDB's ART), after the table is read.
    pub indexes: Vec<String>,
}

impl Table {
    /// A table of `columns` from `file`.
    pub fn new(name: &str, file: &Path, columns: &[(&str, &str)]) -> Table {
        Table {
            name: name.to_owned(),
            file: file.to_owned(),
            columns: columns
                .iter()
                .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
                .collect(),
            indexes: Vec::new(),
        }
    }

    /// The table, its load building an index on each of `columns`.
    pub fn with_indexes(mut self, columns: &[&str]) -> Table {
        self.indexes = columns.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// `CREATE INDEX` for each of the table's indexed columns.
    fn index_sql(&self) -> impl Iterator<Item = String> + '_ {
        self.indexes
            .iter()
            .map(|c| format!("create index {0}_{c} on {0}({c})", self.name))
    }

    /// `CREATE TABLE name AS SELECT * FROM read_csv(file, ...)`, the columns given (no type
    /// sniffing), tab-separated, no header, quotes and escapes off.
    fn create_sql(&self) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .map(|(n, t)| format!("'{n}': '{t}'"))
            .collect();
        format!(
            "create table {} as select * from read_csv({}, delim='\t', header=false, \
             quote='', escape='', auto_detect=false, columns={{{}}})",
            self.name,
            py_str(&self.file.to_string_lossy()),
            cols.join(", ")
        )
    }
}

/// `s` as a SQL string literal (the script writes the SQL as a Python string literal).
fn py_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The Python script that loads `tables` into an in-memory database and prints the one
/// number `query` answers.
pub fn query_script(tables: &[Table], query: &str) -> String {
    let mut s = String::from("import duckdb\nc = duckdb.connect()\n");
    for t in tables {
        s.push_str(&format!("c.execute({:?})\n", t.create_sql()));
    }
    s.push_str(&format!("print(c.execute({query:?}).fetchone()[0])\n"));
    s
}

/// The Python script that loads `tables` into the database file `file` (which must not
/// exist, or holds none of them), checkpoints it and closes it.
pub fn load_script(file: &Path, tables: &[Table]) -> String {
    let mut s = format!(
        "import duckdb\nc = duckdb.connect({:?})\n",
        file.to_string_lossy()
    );
    for t in tables {
        s.push_str(&format!("c.execute({:?})\n", t.create_sql()));
        for sql in t.index_sql() {
            s.push_str(&format!("c.execute({sql:?})\n"));
        }
    }
    s.push_str("c.execute('checkpoint')\nc.close()\nprint('ok')\n");
    s
}

/// The recursive queries: transitive closure over `e(a, b)`, every pair.
pub const CLOSURE_SQL: &str = "with recursive tc(a, b) as (select a, b from e union \
select tc.a, e.b from tc join e on tc.b = e.a) select count(*) from tc";

/// What node 0 reaches over `e(a, b)` in one or more steps.
pub const REACH_SQL: &str = "with recursive r(y) as (select b from e where a = 0 union \
select e.b from r join e on e.a = r.y) select count(*) from r";

/// Same generation over `par(c, p)`.
pub const SAME_GENERATION_SQL: &str = "with recursive sg(x, y) as (select p1.c, p2.c from \
par p1 join par p2 on p1.p = p2.p where p1.c <> p2.c union select p1.c, p2.c from sg join \
par p1 on p1.p = sg.x join par p2 on p2.p = sg.y) select count(*) from sg";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_quote_their_paths() {
        let t = Table::new("e", Path::new("/d/it's/e.facts"), &[("a", "INTEGER")]);
        let s = query_script(std::slice::from_ref(&t), CLOSURE_SQL);
        assert!(
            s.contains("read_csv('/d/it''s/e.facts', delim='\\t'"),
            "{s}"
        );
        assert!(s.contains("columns={'a': 'INTEGER'}"));
        assert!(s.ends_with("fetchone()[0])\n"));
        let l = load_script(Path::new("/d/x.duckdb"), std::slice::from_ref(&t));
        assert!(l.contains("duckdb.connect(\"/d/x.duckdb\")") && l.contains("checkpoint"));
        assert!(!l.contains("create index"));
        let l = load_script(Path::new("/d/x.duckdb"), &[t.with_indexes(&["a"])]);
        assert!(l.contains("c.execute(\"create index e_a on e(a)\")\nc.execute('checkpoint')"));
    }
}
