// Copy 1 GiB into memory not touched before, on 1 and 8 threads, with and without
// MADV_HUGEPAGE, and into memory already touched: the first-touch cost of a fresh Vec.
use std::time::Instant;
extern "C" { fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32; }
const MADV_HUGEPAGE: i32 = 14;
const HUGE: usize = 2 << 20;
fn copy(dst: usize, src: usize, n: usize, threads: usize) {
    let share = n / threads;
    std::thread::scope(|s| { for k in 0..threads { s.spawn(move || unsafe { std::ptr::copy_nonoverlapping((src + k*share) as *const u8, (dst + k*share) as *mut u8, share) }); } });
}
fn main() {
    let n = 1usize << 30;
    let src: Vec<u8> = (0..n).map(|i| i as u8).collect();
    let sp = src.as_ptr() as usize;
    for round in 0..3 {
        for &(threads, huge) in &[(1, false), (8, false), (1, true), (8, true)] {
            let mut v: Vec<u8> = Vec::with_capacity(n + HUGE);
            let a = (v.as_mut_ptr() as usize + HUGE - 1) & !(HUGE - 1);
            let t = Instant::now();
            if huge { unsafe { madvise(a as *mut u8, n, MADV_HUGEPAGE) }; }
            copy(a, sp, n, threads);
            let fresh = t.elapsed().as_secs_f64();
            let t = Instant::now();
            copy(a, sp, n, threads);
            let again = t.elapsed().as_secs_f64();
            println!("round {round} threads {threads} hugepage {huge}: fresh {:.1} GB/s, touched {:.1} GB/s", n as f64 / fresh / 1e9, n as f64 / again / 1e9);
            std::hint::black_box(&mut v);
        }
    }
}
