// A __local buffer sized per work-item, one of exactly the work-group's size (a constant), and
// a smaller one the declaration opts into.
const GROUP: usize = 64;

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    pub struct PerItem {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local(per_item = 1)] scratch: [f32]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    pub struct Exact {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local] scratch: [f32; GROUP]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    pub struct Smaller {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local(allow_smaller)] scratch: [f32; 8]);
    }
}

fn main() {
    let _ = (PerItem::run, Exact::run, Smaller::run);
}
