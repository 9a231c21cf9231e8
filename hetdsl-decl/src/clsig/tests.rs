use super::*;

fn params(src: &str, kernel: &str) -> Vec<Param> {
    let source = parse(src).unwrap();
    source.kernel(kernel).unwrap().params.clone().unwrap()
}

#[test]
fn reads_a_plain_signature() {
    let p = params(
        "__kernel void saxpy(float a, __global const float* x, __global float *y, int n) { y[0] = a; }",
        "saxpy",
    );
    let names: Vec<_> = p.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "x", "y", "n"]);
    assert_eq!(p[0].ty, Ty::Scalar(Scalar::Float));
    assert_eq!(p[0].pointer, None);
    assert_eq!(p[1].pointer, Some(Pointer { space: AddrSpace::Global, const_pointee: true }));
    assert_eq!(p[2].pointer, Some(Pointer { space: AddrSpace::Global, const_pointee: false }));
    assert_eq!(p[3].ty, Ty::Scalar(Scalar::Int));
    assert_eq!(p[1].text, "__global const float*");
}

#[test]
fn qualifier_order_spellings_and_attributes() {
    let src = "kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k(\n\
               const __global float4 *restrict a,\n\
               global uchar16* b,\n\
               __constant unsigned int *c,\n\
               __local double *d,\n\
               unsigned long e, short int f, signed char g, unsigned h) {}";
    let p = params(src, "k");
    assert_eq!(p[0].ty, Ty::Vector(Scalar::Float, 4));
    assert!(p[0].pointer.unwrap().const_pointee);
    assert_eq!(p[1].ty, Ty::Vector(Scalar::UChar, 16));
    assert_eq!(p[2].pointer.unwrap().space, AddrSpace::Constant);
    assert_eq!(p[2].ty, Ty::Scalar(Scalar::UInt));
    assert_eq!(p[3].pointer.unwrap().space, AddrSpace::Local);
    let scalars: Vec<_> = p[4..].iter().map(|p| p.ty.clone()).collect();
    let expected = [Scalar::ULong, Scalar::Short, Scalar::Char, Scalar::UInt].map(Ty::Scalar);
    assert_eq!(scalars, expected);
    assert_eq!(p[1].line, 2);
}

#[test]
fn typedefs_and_defines_resolve() {
    let src = "#define REAL float\n\
               typedef REAL real2 __attribute__((unused));\n\
               typedef uint count_t;\n\
               typedef float4 vec;\n\
               __kernel void k(__global real2* a, count_t n, __global vec* v, REAL s) {}";
    let p = params(src, "k");
    assert_eq!(p[0].ty, Ty::Scalar(Scalar::Float));
    assert_eq!(p[1].ty, Ty::Scalar(Scalar::UInt));
    assert_eq!(p[2].ty, Ty::Vector(Scalar::Float, 4));
    assert_eq!(p[3].ty, Ty::Scalar(Scalar::Float));
    assert_eq!(p[3].text, "float");
}

#[test]
fn structs_get_c_layouts() {
    let src = "typedef struct { float4 center; float radius; int material; } Sphere;\n\
               struct Ray { float3 o; float3 d; };\n\
               typedef struct Ray Ray;\n\
               typedef struct __attribute__((packed)) { char c; int i; } Packed;\n\
               typedef struct __attribute__((aligned(16))) { float v; int k; } Cell;\n\
               struct Lit { float v; } __attribute__((aligned(0x8)));\n\
               typedef struct __attribute__((aligned)) { float v; } Widest;\n\
               typedef struct { Sphere s[2]; char tag; } Scene;\n\
               __kernel void trace(__global const Sphere* s, __global Ray* r, Scene sc) {}";
    let source = parse(src).unwrap();
    let sphere = &source.structs[source.struct_named("Sphere").unwrap()];
    assert_eq!(sphere.layout, Some(Layout { size: 32, align: 16 }));
    let offsets: Vec<_> =
        sphere.fields.iter().map(|f| (f.name.as_str(), f.offset.unwrap())).collect();
    assert_eq!(offsets, [("center", 0), ("radius", 16), ("material", 20)]);
    let ray = &source.structs[source.struct_named("Ray").unwrap()];
    assert_eq!(ray.layout, Some(Layout { size: 32, align: 16 }));
    let packed = &source.structs[source.struct_named("Packed").unwrap()];
    assert_eq!(packed.layout, Some(Layout { size: 5, align: 1 }));
    // `aligned(N)` raises the struct's alignment and pads its size; a bare `aligned` (the
    // target's largest alignment) leaves the layout unknown rather than guessed.
    let cell = &source.structs[source.struct_named("Cell").unwrap()];
    assert_eq!(cell.layout, Some(Layout { size: 16, align: 16 }));
    let lit = &source.structs[source.struct_named("Lit").unwrap()];
    assert_eq!(lit.layout, Some(Layout { size: 8, align: 8 }));
    assert_eq!(source.structs[source.struct_named("Widest").unwrap()].layout, None);
    let scene = &source.structs[source.struct_named("Scene").unwrap()];
    assert_eq!(scene.layout, Some(Layout { size: 80, align: 16 }));
    let p = source.kernel("trace").unwrap().params.as_ref().unwrap();
    assert!(matches!(p[0].ty, Ty::Struct(_)));
    assert_eq!(p[2].ty.display(&source.structs).to_string(), "Scene");
}

#[test]
fn bodies_and_helpers_are_skipped() {
    let src = "float helper(float x) { return x; }\n\
               /* __kernel void commented(int x) */\n\
               __kernel void a(int n) { if (n) { struct S { int q; } s; } }\n\
               __kernel void b(void) {}\n\
               void kernel_like(void);";
    let source = parse(src).unwrap();
    let names: Vec<_> = source.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(source.kernel("b").unwrap().params, Ok(vec![]));
    assert_eq!(source.kernel("a").unwrap().line, 2);
}

#[test]
fn unknown_types_and_unsupported_parameters_are_reported_not_guessed() {
    let src = "__kernel void k(__global Mystery* m, read_only image2d_t img, __global float** pp, __local int* l) {}";
    let p = params(src, "k");
    assert_eq!(p[0].ty, Ty::Opaque("Mystery".into()));
    assert!(p[1].unsupported.is_some());
    assert!(p[2].unsupported.is_some());
    assert_eq!(p[3].unsupported, None);
}

#[test]
fn a_broken_signature_is_an_error_of_that_kernel_only() {
    let src = "__kernel void bad(__global float* x, ) {}\n__kernel void good(int n) {}";
    let source = parse(src).unwrap();
    let err = source.kernel("bad").unwrap().params.clone().unwrap_err();
    assert_eq!(err.line, 0);
    assert!(source.kernel("good").unwrap().params.is_ok());
}

#[test]
fn prototypes_defer_to_definitions() {
    let src = "__kernel void k(int);\n__kernel void k(int n) {}";
    let source = parse(src).unwrap();
    assert_eq!(source.kernel("k").unwrap().params.as_ref().unwrap()[0].name, "n");
}

#[test]
fn malformed_input_gives_errors() {
    for src in ["__kernel void k(int n) {", "typedef struct { int a; ", "\"open", "a /* b"] {
        assert!(parse(src).is_err(), "{src}");
    }
}

/// The fuzz target's corpus (hetdsl-decl/fuzz/corpus/clsig), replayed on stable: every input
/// reads without a panic and what it gives is self-consistent.
#[test]
fn fuzz_corpus_reads_consistently() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/clsig");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        if let Ok(source) = parse(text) {
            assert_eq!(source.self_check(text), Ok(()), "{}", path.display());
        }
        // As the fuzz target does: with `-D` defines from the first line.
        if let Ok(defines) = defines_from_options(text.lines().next().unwrap_or_default()) {
            if let Ok(source) = parse_with_defines(text, &defines) {
                assert_eq!(source.self_check(text), Ok(()), "{} with defines", path.display());
            }
        }
        count += 1;
    }
    assert!(count >= 10, "only {count} corpus inputs in {}", dir.display());
}

/// Found by the fuzzer: `__attribute__` followed by a closing bracket made the group skipper
/// slice backwards.
#[test]
fn attribute_before_a_stray_closer_is_skipped() {
    for src in ["__kernel __attribute__ ) void f(int x) {}", "struct __attribute__ ] S { int a; };"]
    {
        let _ = parse(src);
    }
    let source = parse("__kernel __attribute__ ) void f(int x) {}").unwrap();
    assert_eq!(source.kernel("f").unwrap().params.as_ref().unwrap()[0].name, "x");
}

fn defs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

fn first_type(src: &str, defines: &[(&str, &str)]) -> Ty {
    let source = parse_with_defines(src, &defs(defines)).unwrap();
    source.kernel("k").unwrap().params.clone().unwrap()[0].ty.clone()
}

fn refusal(src: &str, defines: &[(&str, &str)]) -> ParseError {
    parse_with_defines(src, &defs(defines)).unwrap_err()
}

const REAL_BY_IFDEF: &str =
    "#ifdef USE_DOUBLE\n#define REAL double\n#else\n#define REAL float\n#endif\n\
                             __kernel void k(REAL a) {}";

#[test]
fn ifdef_takes_the_branch_the_defines_select() {
    assert_eq!(first_type(REAL_BY_IFDEF, &[]), Ty::Scalar(Scalar::Float));
    assert_eq!(first_type(REAL_BY_IFDEF, &[("USE_DOUBLE", "1")]), Ty::Scalar(Scalar::Double));
    // Before conditionals were evaluated, the last `#define` won whatever the defines.
    let ifndef = REAL_BY_IFDEF.replace("#ifdef USE_DOUBLE", "#ifndef USE_FLOAT");
    assert_eq!(first_type(&ifndef, &[]), Ty::Scalar(Scalar::Double));
    assert_eq!(first_type(&ifndef, &[("USE_FLOAT", "")]), Ty::Scalar(Scalar::Float));
}

#[test]
fn an_old_signature_under_if_0_is_not_read() {
    let src = "#if 0\n__kernel void k(int old) {}\n#endif\n__kernel void k(float a) {}";
    let source = parse(src).unwrap();
    assert_eq!(source.kernels.len(), 1);
    assert_eq!(first_type(src, &[]), Ty::Scalar(Scalar::Float));
}

#[test]
fn if_elif_else_chains_and_nesting() {
    let src = "#if BLOCK > 8\n#define T long\n#elif BLOCK > 4\n#define T int\n#else\n#define T short\n#endif\n\
               #if 1\n#if 0\n#define T char\n#else\n#if 0\n#error never\n#endif\n#endif\n#endif\n\
               __kernel void k(T a) {}";
    assert_eq!(first_type(src, &[("BLOCK", "16")]), Ty::Scalar(Scalar::Long));
    assert_eq!(first_type(src, &[("BLOCK", "8")]), Ty::Scalar(Scalar::Int));
    assert_eq!(first_type(src, &[("BLOCK", "4")]), Ty::Scalar(Scalar::Short));
    // An unknown name is 0, as C has it.
    assert_eq!(first_type(src, &[]), Ty::Scalar(Scalar::Short));
}

#[test]
fn condition_operators_follow_c() {
    let cases = [
        ("defined(A) && defined B", true),
        ("!defined(C)", true),
        ("defined C || A == 2", true),
        ("A * 3 + 1 == 7 && (A << 2) == 8 && 7 / A == 3 && 7 % A == 1", true),
        ("-A < 0 && ~0 == -1 && (A ^ 3) == 1 && (A | 1) == 3 && (A & 1) == 0", true),
        ("A >= 2 && A <= 2 && A != 3 && !(A > 2)", true),
        ("A == 2 ? 0 : 1", false),
        ("0x10 == 16 && 010 == 8 && 2u == 2 && 3L == 3", true),
        ("B", true),
        ("UNKNOWN", false),
        ("(1 + 2) * 3 == 9 && 1 + 2 * 3 == 7", true),
    ];
    for (cond, expected) in cases {
        let src = format!(
            "#if {cond}\n#define T int\n#else\n#define T float\n#endif\n__kernel void k(T a) {{}}"
        );
        let want = Ty::Scalar(if expected { Scalar::Int } else { Scalar::Float });
        assert_eq!(first_type(&src, &[("A", "2"), ("B", "A - 1")]), want, "{cond}");
    }
}

#[test]
fn source_defines_and_undefs_apply_in_order() {
    let src = "#define N 1\n#undef N\n#ifdef N\n#define T int\n#else\n#define T float\n#endif\n\
               __kernel void k(T a) {}";
    assert_eq!(first_type(src, &[("N", "1")]), Ty::Scalar(Scalar::Float));
    // A source `#define` overrides a `-D` from then on.
    let src = "#define N 4\n#if N == 4\n#define T int\n#endif\n__kernel void k(T a) {}";
    assert_eq!(first_type(src, &[("N", "2")]), Ty::Scalar(Scalar::Int));
}

#[test]
fn undecidable_conditions_are_refused_with_their_line() {
    let cases = [
        ("#define F(x) x\n#if F(1)\n#endif", 1, "function-like macro"),
        ("\n\n#if 1 +\n#endif", 2, "cannot evaluate `#if 1 +`"),
        ("#if 1 / 0\n#endif", 0, "division by zero"),
        ("#if (1\n#endif", 0, "without its `)`"),
        ("#if 1.5\n#endif", 0, "not an integer"),
        ("#if 'a'\n#endif", 0, "only integers"),
        ("#if true\n#endif", 0, "write 1 or 0"),
        ("#if defined\n#endif", 0, "`defined` takes a macro name"),
        ("#ifdef\n#endif", 0, "takes one macro name"),
        ("#if\n#endif", 0, "empty expression"),
        ("#if 1 << 70\n#endif", 0, "shift"),
        ("#if 1\n", 0, "without its `#endif`"),
        ("int a;\n#endif", 1, "without an `#if`"),
        ("#else", 0, "without an `#if`"),
        ("#if 1\n#else\n#else\n#endif", 2, "second `#else`"),
        ("#if 1\n#else\n#elif 1\n#endif", 2, "`#elif` after `#else`"),
        ("#define X 1\n#if X\n#error no doubles here\n#endif", 2, "#error"),
    ];
    for (src, line, why) in cases {
        let err = refusal(src, &[]);
        assert_eq!(err.line, line, "{src}: {err}");
        assert!(err.message.contains(why), "{src}: {err}");
    }
}

#[test]
fn skipped_branches_are_not_evaluated() {
    let src = "#if 0\n#if F(1) +\n#error x\n#endif\n#elif 1 / 0\n#endif\n__kernel void k(int a) {}";
    // The `#elif` is evaluated (the `#if` failed) and divides by zero.
    assert!(refusal(src, &[]).message.contains("division by zero"));
    let src = "#if 1\n#elif 1 / 0\n#else\n#if F(1)\n#endif\n#endif\n__kernel void k(int a) {}";
    assert_eq!(first_type(src, &[]), Ty::Scalar(Scalar::Int));
}

#[test]
fn device_dependent_conditionals_refuse_code_but_allow_pragmas() {
    let pragmas = "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n\
                   #elif defined(cl_amd_fp64)\n#pragma OPENCL EXTENSION cl_amd_fp64 : enable\n\
                   #else\n#error \"no doubles\"\n#endif\n__kernel void k(double a) {}";
    assert_eq!(first_type(pragmas, &[]), Ty::Scalar(Scalar::Double));
    let code = "#if __OPENCL_VERSION__ >= 200\n#define REAL double\n#else\n#define REAL float\n\
                #endif\n__kernel void k(REAL a) {}";
    let err = refusal(code, &[]);
    assert_eq!(err.line, 0);
    assert!(err.message.contains("`__OPENCL_VERSION__`"), "{err}");
    // Defined by the options, the name is no longer the device's to decide.
    assert_eq!(first_type(code, &[("__OPENCL_VERSION__", "120")]), Ty::Scalar(Scalar::Float));
}

#[test]
fn defines_from_options_reads_every_spelling() {
    let got = defines_from_options(
        "-D BLOCK=16 -DUSE_DOUBLE -cl-fast-relaxed-math -DN=2 -D EMPTY= -I dir -DN=3",
    )
    .unwrap();
    assert_eq!(
        got,
        defs(&[
            ("BLOCK", "16"),
            ("USE_DOUBLE", "1"),
            ("__FAST_RELAXED_MATH__", "1"),
            ("EMPTY", ""),
            ("N", "3")
        ])
    );
    assert!(defines_from_options("-D").unwrap_err().contains("without a name"));
    assert!(defines_from_options("-D 1X=2").unwrap_err().contains("not a macro name"));
    assert!(defines_from_options("-D=3").unwrap_err().contains("not a macro name"));
}

#[test]
fn defines_size_arrays_and_types_in_structs() {
    let src = "#define ORDER 3\n\
               typedef struct { int indices[ORDER + 1]; float m[2*N]; REAL r; } Poly;\n\
               __kernel void k(__global Poly* p) {}";
    let source = parse_with_defines(src, &defs(&[("N", "2"), ("REAL", "double")])).unwrap();
    let poly = &source.structs[source.struct_named("Poly").unwrap()];
    let tys: Vec<_> = poly.fields.iter().map(|f| f.ty.clone()).collect();
    assert_eq!(
        tys,
        [
            Ty::Array(Box::new(Ty::Scalar(Scalar::Int)), 4),
            Ty::Array(Box::new(Ty::Scalar(Scalar::Float)), 4),
            Ty::Scalar(Scalar::Double)
        ]
    );
    assert_eq!(poly.layout, Some(Layout { size: 40, align: 8 }));
    // A parameter's first size declares a pointer and is not read; the next ones are sizes.
    let src = parse("__kernel void k(__global int a[][M * 2]) {}").unwrap();
    let err = src.kernel("k").unwrap().params.clone().unwrap_err();
    assert!(err.message.contains("`M` is not a constant"), "{err:?}");
}

#[test]
fn extern_c_blocks_hold_ordinary_declarations() {
    let src = "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\
               typedef struct { float x; } P;\n__kernel void k(__global P* p) {}\n\
               #ifdef __cplusplus\n}\n#endif\n\
               extern \"C\" { __kernel void j(int n) {} }";
    let source = parse(src).unwrap();
    assert!(matches!(first_type(src, &[]), Ty::Struct(_)));
    assert!(source.kernel("j").is_some());
}

#[test]
fn struct_fields_may_be_arrays_of_structs() {
    let src = "struct V { float3 p; };\ntypedef struct { struct V v[3]; int n; } Mesh;\n\
               typedef struct V V;\ntypedef struct { V w[2][2]; } Grid;\n\
               __kernel void k(__global Mesh* m, __global Grid* g) {}";
    let source = parse(src).unwrap();
    let mesh = &source.structs[source.struct_named("Mesh").unwrap()];
    assert_eq!(mesh.layout, Some(Layout { size: 64, align: 16 }));
    let grid = &source.structs[source.struct_named("Grid").unwrap()];
    assert_eq!(grid.layout, Some(Layout { size: 64, align: 16 }));
}

#[test]
fn images_and_samplers_are_refused_plainly() {
    let src = "__kernel void k(read_only image2d_t a, image3d_t b, sampler_t s, write_only image2d_t c) {}";
    for p in params(src, "k") {
        let why = p.unsupported.unwrap_or_default();
        assert!(why.contains("images and samplers are not supported by co-execution"), "{why}");
    }
}

#[test]
fn read_with_options_takes_the_defines_of_an_options_string() {
    let src = "#if BLOCK > 8\n__kernel void k(long a) {}\n#else\n__kernel void k(int a) {}\n#endif";
    let source = read_with_options(src, "-cl-mad-enable -D BLOCK=16").unwrap();
    let p = source.kernel("k").unwrap().params.clone().unwrap();
    assert_eq!(p[0].ty, Ty::Scalar(Scalar::Long));
    assert_eq!(source.kernels.len(), 1);
    let err = read_with_options(src, "-D").unwrap_err();
    assert!(err.message.contains("without a name"), "{err}");
}

#[test]
fn an_unreadable_struct_says_why_instead_of_vanishing() {
    let src = "typedef struct { int a[SIZE_UNKNOWN]; } S;\nstruct T { int b : 3; };\n\
               __kernel void k(__global S* s, __global struct T* t) {}";
    let source = parse(src).unwrap();
    let p = source.kernel("k").unwrap().params.clone().unwrap();
    assert_eq!(p[0].ty, Ty::Opaque("S".into()));
    let why = &source.unread["S"];
    assert_eq!(why.line, 0);
    assert!(why.message.contains("`SIZE_UNKNOWN` is not a constant"), "{why}");
    assert!(source.unread["struct T"].message.contains("bit-fields"));
}

/// OpenCL C defines its limits and constants on every device: a branch on them is the branch
/// the compiler takes, not the one an undefined name would choose.
#[test]
fn the_specification_s_own_macros_are_defined() {
    let code = "#ifdef INT_MAX\ntypedef int real;\n#else\ntypedef long real;\n#endif\n\
                #if CHAR_BIT != 8 || UINT_MAX != 4294967295\n#error odd bytes\n#endif\n\
                #if !defined(M_PI_F) || INT_MIN >= 0\n#error no constants\n#endif\n\
                __kernel void k(real n) {}";
    assert_eq!(first_type(code, &[]), Ty::Scalar(Scalar::Int));
    // The build's own `-D` still overrides them.
    let code = "#if INT_MAX == 7\ntypedef float real;\n#else\ntypedef int real;\n#endif\n\
                __kernel void k(real n) {}";
    assert_eq!(first_type(code, &[("INT_MAX", "7")]), Ty::Scalar(Scalar::Float));
}

/// `#if` compares and divides unsigned values as C does: a `u` suffix, or a literal too large
/// for `intmax_t`, makes whatever it meets unsigned.
#[test]
fn unsigned_values_in_if_are_compared_as_unsigned() {
    let pick = |cond: &str| {
        let code = format!(
            "#if {cond}\ntypedef int real;\n#else\ntypedef float real;\n#endif\n\
             __kernel void k(real n) {{}}"
        );
        first_type(&code, &[]) == Ty::Scalar(Scalar::Int)
    };
    for yes in [
        "0xFFFFFFFFFFFFFFFF > 0",
        "~0u > 0xFFFFFFFF",
        "(0u - 1) > 0",
        "-1 < 0",
        "(1 ? -1 : 0u) > 0",
        "0xFFFFFFFFFFFFFFFF >> 63 == 1",
        "-8 / 2u > 4",
        "ULONG_MAX > UINT_MAX",
        "-1 >> 1 == -1",
    ] {
        assert!(pick(yes), "`#if {yes}` is true");
    }
    for no in ["-1 < 0u", "-1 > 0", "0u > 0", "(2u - 3) < 0"] {
        assert!(!pick(no), "`#if {no}` is false");
    }
}

/// Lines are joined before comments end, as the compiler reads them: a `//` comment ending in
/// `\\` swallows the next line, and a `\\` followed by blanks still joins.
#[test]
fn a_backslash_at_the_end_of_a_comment_continues_it() {
    let code = "#define REAL float // a note \\\n#define REAL double\n__kernel void k(REAL a) {}";
    assert_eq!(first_type(code, &[]), Ty::Scalar(Scalar::Float));
    let code = "__kernel void k(float a, \\  \n int b) {}";
    let source = parse(code).unwrap();
    assert_eq!(source.kernel("k").unwrap().params.as_ref().unwrap().len(), 2);
}

/// The kernel qualifier may follow the return type, as the compiler accepts it.
#[test]
fn a_kernel_qualifier_after_void_is_a_kernel() {
    let source = parse("void __kernel vk(__global float* y) { y[0] = 1.0f; }").unwrap();
    let k = source.kernel("vk").expect("a kernel");
    assert_eq!(k.params.as_ref().unwrap().len(), 1);
}

/// What the reader finds a kernel writes.
mod writes;
