//! A seed is a function of itself within one process too: the cluster scenario (hosts that
//! crash mid-connection) run twice in this process gives one trace per seed. Its own test
//! binary, with one test: another test's tokio tasks, on another thread, would take task
//! ids in between (`headspace_sim::task_ids`).

use headspace_sim::rng::Rng;
use headspace_sim::run::run;
use headspace_sim::scenario::find;

#[test]
fn cluster_seeds_run_again_in_one_process_give_the_same_traces() {
    assert!(
        headspace_sim::seeded_runtimes(),
        "built without --cfg tokio_unstable (.cargo/config.toml)"
    );
    let s = find("cluster").unwrap();
    let once = |seed: u64| run(&(s.plan)(&mut Rng::new(seed)), seed, None).trace;
    let first: Vec<Vec<u8>> = (1..=4).map(once).collect();
    assert!(first.iter().all(|t| t.len() > 1000), "traces were recorded");
    // Again, in another order: each seed as it was, wherever tokio's counter stands.
    for seed in (1..=4).rev() {
        assert!(
            once(seed) == first[seed as usize - 1],
            "cluster seed {seed}: the second run in this process differs"
        );
    }
}
