//! Indexes built on demand: a large `.facts` relation is stored with its first column
//! indexed only, and each later column gets its postings once a query looks the relation
//! up by it alone ([`strata_store::RelationMeta::on_demand`]). Until then such a lookup
//! reads the relation whole, as for a column declared without an index.
//!
//! In a server ([`App::build_indexes_on_demand`], which `strata serve` sets), a call whose
//! evaluation read a relation whole for such a column starts the build after it answers,
//! on a thread of its own, one build at a time: the call never waits for it, and calls
//! that start after its commit are served by the index. A one-shot command builds nothing
//! (it would wait for the build before exiting); `strata index` builds it there.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::app::App;

/// Whether indexes are built on demand, and whether a build is running.
#[derive(Debug, Default)]
pub(crate) struct Demand {
    /// Set by [`App::build_indexes_on_demand`].
    on: AtomicBool,
    /// Set while a build runs.
    building: AtomicBool,
}

impl App {
    /// Has this application (a server's) build, after a call, the postings a lookup of the
    /// call wanted and the database keeps on demand: see the `demand` module.
    pub fn build_indexes_on_demand(&self) {
        self.demand().on.store(true, Ordering::SeqCst);
    }

    /// After a call whose evaluation read stored relations whole (`unindexed`: each
    /// relation and the columns a lookup bound, as [`strata_eval::Outcome::unindexed`]
    /// lists them): starts the build of those columns the database keeps on demand, when
    /// this application builds them and no build is running. Answers whether it started.
    pub(crate) fn demand_indexes(&self, unindexed: &[(String, Vec<usize>)]) -> bool {
        if unindexed.is_empty() || !self.demand().on.load(Ordering::SeqCst) {
            return false;
        }
        let Ok(catalog) = self.store().catalog() else {
            return false;
        };
        let wanted: Vec<(String, Vec<usize>)> = unindexed
            .iter()
            .filter(|(name, columns)| {
                catalog
                    .relations
                    .get(name)
                    .is_some_and(|m| !m.demanded(columns).is_empty())
            })
            .cloned()
            .collect();
        if wanted.is_empty() {
            return false;
        }
        if self.demand().building.swap(true, Ordering::SeqCst) {
            return false;
        }
        let app = self.clone();
        let run = move || {
            match app.store().build_demanded(&wanted) {
                Ok(built) => {
                    for c in built {
                        eprintln!(
                            "strata: built the index of {}.{} ({} values), which a query \
                             looked the relation up by",
                            c.relation, c.column, c.values
                        );
                    }
                }
                Err(e) => eprintln!("strata: warning: building an index a query wanted: {e}"),
            }
            app.demand().building.store(false, Ordering::SeqCst);
        };
        match std::thread::Builder::new()
            .name("strata-index".to_owned())
            .spawn(run)
        {
            Ok(_) => true,
            Err(_) => {
                self.demand().building.store(false, Ordering::SeqCst);
                false
            }
        }
    }
}
