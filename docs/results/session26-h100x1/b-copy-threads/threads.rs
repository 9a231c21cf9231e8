// Copy 1 GiB between two buffers already touched, split over 1 to 16 threads: how far the
// host's copy rate grows with threads (a one-shot saxpy's transfers are such copies).
use std::time::Instant;
fn copy(dst: usize, src: usize, n: usize, threads: usize) {
    let share = n / threads;
    std::thread::scope(|s| { for k in 0..threads { s.spawn(move || unsafe { std::ptr::copy_nonoverlapping((src + k*share) as *const u8, (dst + k*share) as *mut u8, share) }); } });
}
fn main() {
    let n = 1usize << 30;
    let src: Vec<u8> = (0..n).map(|i| i as u8).collect();
    let mut dst = vec![1u8; n];
    for round in 0..3 {
        for threads in [1, 4, 8, 12, 16] {
            let t = Instant::now();
            copy(dst.as_mut_ptr() as usize, src.as_ptr() as usize, n, threads);
            println!("round {round} threads {threads:2}: {:.1} GB/s", n as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
    }
    std::hint::black_box(&dst);
}
