//! Runs N in-process transactions on an initialized project: txloop <root> <n>
use liza::blackboard::{Actor, Store};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let store = Store::open(std::path::Path::new(&a[1])).unwrap();
    let n: usize = a[2].parse().unwrap();
    let t = std::time::Instant::now();
    for k in 0..n {
        store
            .transact(&Actor::Human, |tx| {
                tx.state.human_notes.get_or_insert_with(Vec::new).push(
                    liza::blackboard::model::HumanNote {
                        id: format!("note-x{k}"),
                        timestamp: Some(tx.now),
                        message: "m".into(),
                        target: Some("all".into()),
                        seen_by: Some(vec![]),
                        extra: Default::default(),
                    },
                );
                tx.log("human_note");
                Ok::<_, String>(())
            })
            .unwrap();
    }
    eprintln!("{:?} per tx", t.elapsed() / n as u32);
}
