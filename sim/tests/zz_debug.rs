use headspace_sim::run::run;
#[test]
fn dbg_300693() {
    let plan = headspace_sim::plan::Plan::random(&mut headspace_sim::rng::Rng::new(300693), 2);
    let o = run(&plan, 300693, None);
    std::fs::write("/tmp/s300693.jsonl", &o.trace).unwrap();
    std::fs::write("/tmp/s300693.store", &o.store).unwrap();
    eprintln!("{:#?}", o.violations);
    eprintln!("{:#?}", plan.faults);
}
