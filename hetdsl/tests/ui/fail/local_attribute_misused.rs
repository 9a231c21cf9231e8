// `per_item` sizes a slice `[T]` by the work-group; a fixed array takes no `per_item`, a slice
// needs one, the count is positive, and the options are `per_item` and `allow_smaller`.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    struct OnArray {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local(per_item = 2)] scratch: [f32; 128]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    struct NoSize {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local] scratch: [f32]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    struct Zero {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local(per_item = 0)] scratch: [f32]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    struct Unknown {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local(per_group = 64)] scratch: [f32]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/scratch.cl", local = 64)]
    struct Both {
        fn stage(#[inout(1:1)] x: &mut [f32], #[local(per_item = 1, allow_smaller)] scratch: [f32]);
    }
}

fn main() {}
