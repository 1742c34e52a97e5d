use vmemsim_core::{
    generate, mrc,
    trace::{collect, VecSource},
};
fn main() {
    let z = collect(
        &mut generate::open("zipf:pages=100000,alpha=0.9,n=20000000,shuffle=false", 1).unwrap(),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let h = mrc::lru_histogram(&mut VecSource::new(z)).unwrap();
    eprintln!("{} {:?}", h.cold, t.elapsed());
}
