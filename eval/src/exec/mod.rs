//! Execution: the planned rules run to a fixpoint, stratum by stratum.
//!
//! Takes an [`crate::ir::Ir`] and a [`crate::FactSource`]; gives an [`engine::Evaluation`]:
//! every relation's tuples in memory ([`relation`], with [`index`]es, [`sorted`] runs and
//! growing [`buffer`]s), the derivations recorded for witnesses ([`witness`]), and the
//! work, rounds and profile spent. The [`engine`] runs semi-naive rounds; each round's work
//! is cut into tasks that [`worker`]s run on the [`pool`]'s threads, each writing its own
//! [`delta`]; the [`pair`] join is the fast path of the commonest recursive plan. Work,
//! budgets and cancellation are counted in [`budget`].

pub(crate) mod budget;
pub(crate) mod buffer;
pub(crate) mod delta;
pub(crate) mod engine;
pub(crate) mod grouped;
pub(crate) mod index;
pub(crate) mod pair;
pub(crate) mod pool;
pub(crate) mod relation;
pub(crate) mod sorted;
pub(crate) mod witness;
pub(crate) mod worker;
