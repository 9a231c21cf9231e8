// OpenCL fields named like Rust keywords are matched by raw identifiers (`r#type`).
#[repr(C)]
#[derive(Clone, Copy, hetdsl::Pod)]
pub struct Tagged {
    pub r#type: i32,
    pub r#match: f32,
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/keywords.cl", local = 8)]
    pub struct Retag {
        fn retag(#[inout(1:1)] items: &mut [Tagged], to: i32);
    }
}

fn main() {
    let _: fn(&Retag, usize, &mut [Tagged], i32) -> hetdsl::Result<hetdsl::Report> = Retag::run;
}
