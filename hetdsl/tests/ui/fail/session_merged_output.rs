// An output merged across devices (`merge = "sum"`) has no session form: every device writes
// all of it, while a session keeps each element on one device. Binding such a kernel to a
// session does not compile.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/merge.cl", local = 64)]
    struct Histogram {
        fn histogram(
            #[input(1:1)] values: &[u32],
            #[output(whole, merge = "sum")] bins: &mut [u32],
            nbins: u32,
        );
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/merge.cl", local = 64)]
fn histogram(
    #[input(1:1)] values: &[u32],
    #[inout(whole, merge = "sum")] bins: &mut [u32],
    nbins: u32,
);

fn bind(h: &Histogram, session: &hetdsl::Session) {
    let _ = h.on(session);
    let _ = histogram::on(session);
}

fn main() {}
