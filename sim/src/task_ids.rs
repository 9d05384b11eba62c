//! Every run starts at the same place in tokio's task numbering.
//!
//! tokio numbers tasks from one process-wide counter, and a runtime keeps its tasks in
//! shards chosen by task id (four for a one-thread runtime: the id's low bits). When a
//! simulated host crashes, its runtime shuts its tasks down shard by shard, and each
//! dropped connection is a message on the simulated network; so the order of those
//! messages, and everything after, depended on where the counter stood when the run began.
//! A second run of a seed in the same process began elsewhere and could differ. Starting
//! each run at an id that is a multiple of [`ALIGN`] gives every task the shard it had in
//! any other run of the seed.
//!
//! This holds while the run is the only thing spawning tokio tasks in the process (the
//! `headspace-sim` binary; a test binary with one test): another thread's tasks would take
//! ids in between.

/// Runs start at a task id that is a multiple of this: a multiple of tokio's shard count
/// for one-thread runtimes (4), with room to spare should it grow.
pub const ALIGN: u64 = 64;

/// Spends task ids until the next one spawned is a multiple of [`ALIGN`]; returns that id.
pub fn align_task_ids() -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime to number tasks");
    loop {
        let id = rt.block_on(async {
            tokio::spawn(async { tokio::task::id() })
                .await
                .expect("an empty task")
        });
        let n: u64 = id.to_string().parse().expect("a task id is a number");
        if (n + 1).is_multiple_of(ALIGN) {
            return n + 1;
        }
    }
}
