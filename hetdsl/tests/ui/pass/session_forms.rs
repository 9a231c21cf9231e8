// The session form of declarations: `on(&session)` and the bound `run`/`launch`, taking
// `hetdsl::Buffer`s where the one-shot form takes slices (a halo input included), for `kernel!`
// and `#[coexec]`.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    pub struct Saxpy {
        fn saxpy(a: f32, #[input(1:1, halo = 2)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64)]
pub fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn declared(
    k: &Saxpy,
    s: &hetdsl::Session,
    x: &hetdsl::Buffer<f32>,
    y: &mut hetdsl::Buffer<f32>,
) -> hetdsl::Result<hetdsl::Report> {
    let on: SaxpyOn<'_> = k.on(s)?;
    let _: &hetdsl::Session = on.session();
    let launch: hetdsl::SessionLaunch<'_> = on.launch(1024, 2.0, x, y, 1024)?;
    drop(launch);
    on.run(1024, 2.0, x, y, 1024)
}

fn function(
    rt: &hetdsl::Runtime,
    x: &hetdsl::Buffer<f32>,
    y: &mut hetdsl::Buffer<f32>,
) -> hetdsl::Result<hetdsl::Report> {
    let s: hetdsl::Session = saxpy::session(rt)?;
    let on: saxpy::On<'_> = saxpy::on(&s)?;
    on.run(1024, 2.0, x, y, 1024)
}

fn main() {
    // Types only: the UI tests do not open devices.
    let _ = (declared, function);
}
