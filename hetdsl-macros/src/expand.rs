//! Code generation. Both macros produce the same launch code; `kernel!` wraps it in a struct
//! that owns the built program, `#[coexec]` in a function backed by a per-process program cache.
//! Generated paths are absolute (`::hetdsl::…`, `::core::…`) so that user imports cannot change
//! their meaning.

mod session;

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::check::{self, Checked};
use crate::errors::Errors;
use crate::parse::{
    CoexecInput, Direction, Func, KernelInput, LocalSize, Param, Pattern, Role, Side,
};

pub fn kernel(input: TokenStream) -> TokenStream {
    let input: KernelInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.into_compile_error(),
    };
    let mut errors = Errors::default();
    let checked = check::check(&input.options, &input.func, &mut errors);
    let KernelInput { attrs, vis, struct_name, func, .. } = &input;
    let parts = Parts::new(func, &checked);
    let Parts { global_ty, params, args, names, all_names, kernel_name, source, .. } = &parts;
    let build_options = &checked.build_options;
    let body = parts.launch_body(quote!(&self.program), quote!(Self::PARAMETERS));
    let decls = func.params.iter().map(|p| decl_tokens(p, &checked));
    let local = &checked.local;
    let doc_run = format!(
        "Co-executes `{}` over `global` work-items on every device of the program, with the declared \
         balancer. The outputs are complete when this returns `Ok`.",
        checked.kernel_name
    );
    let extras = parts.extras(&checked);
    let on_session = session::kernel_items(&parts, vis, struct_name);
    let errors = errors.finish().err().map(syn::Error::into_compile_error);
    quote! {
        #errors
        #(#attrs)*
        #vis struct #struct_name {
            program: ::hetdsl::Program,
        }

        impl #struct_name {
            /// The kernel's name in the OpenCL source.
            pub const KERNEL: &'static str = #kernel_name;

            /// The parameters' names as declared, in the kernel's order (`__local` ones
            /// included): `run` and `verify` name the argument at fault with them.
            pub const PARAMETERS: &'static [&'static str] = &[#(#all_names),*];

            /// The OpenCL source with its includes, as embedded at compile time.
            pub fn source() -> ::hetdsl::KernelSource {
                #source
            }

            /// Builds the kernel for every device of `rt`. Build once, run many times.
            pub fn new(rt: &::hetdsl::Runtime) -> ::hetdsl::Result<Self> {
                ::core::result::Result::Ok(Self { program: rt.program_with_options(&Self::source(), #build_options)? })
            }

            /// Builds another version of the kernel, read at run time (such as
            /// `KernelSource::from_file`), for every device of `rt`: the source is first checked
            /// against this declaration with the compile-time check's rules and words, and
            /// refused with every problem (`Error::SourceMismatch`) before anything is built.
            pub fn with_source(rt: &::hetdsl::Runtime, source: &::hetdsl::KernelSource) -> ::hetdsl::Result<Self> {
                let declaration = [#(#decls),*];
                ::hetdsl::__private::check_source(source, #build_options, Self::KERNEL, &[#(#local),*], &declaration)?;
                ::core::result::Result::Ok(Self { program: rt.program_with_options(source, #build_options)? })
            }

            /// The built program: its devices and build logs.
            pub fn program(&self) -> &::hetdsl::Program {
                &self.program
            }

            #[doc = #doc_run]
            #[allow(clippy::too_many_arguments)]
            pub fn run(&self, global: #global_ty, #(#params),*) -> ::hetdsl::Result<::hetdsl::Report> {
                let run = self.launch(global, #(#names),*).and_then(::hetdsl::Launch::run);
                run.map_err(|e| ::hetdsl::__private::name_argument(e, Self::PARAMETERS))
            }

            /// Checks the kernel under co-execution: the launch [`Self::run`] would run, once on
            /// one device alone and once co-executed with a deliberately uneven random split,
            /// every output compared (see [`::hetdsl::Launch::verify`]). Run it once per new
            /// kernel; a pattern that does not say what the kernel writes shows here.
            #[allow(clippy::too_many_arguments)]
            pub fn verify(&self, global: #global_ty, #(#params),*) -> ::hetdsl::Result<::hetdsl::Verification> {
                let verified = self.launch(global, #(#names),*).and_then(::hetdsl::Launch::verify);
                verified.map_err(|e| ::hetdsl::__private::name_argument(e, Self::PARAMETERS))
            }

            /// The launch [`Self::run`] would run, to adjust before `.run()`: another balancer
            /// (`.balancer(..)`), a subset of devices, fault injection.
            #[allow(clippy::too_many_arguments)]
            pub fn launch<'a>(&'a self, global: #global_ty, #(#args),*) -> ::hetdsl::Result<::hetdsl::Launch<'a>> {
                #body
            }
        }

        #on_session
        #extras
    }
}

/// The `#[coexec]` input and its check, or only the errors where nothing can be generated: a
/// declaration that does not parse, or one standing where its items cannot (see `placement`).
fn coexec_checked(
    args: TokenStream,
    item: TokenStream,
) -> Result<(CoexecInput, Checked, Errors), TokenStream> {
    let mut errors = Errors::default();
    let misplaced = crate::placement::misplaced(&item);
    let placed = misplaced.is_none();
    errors.extend(misplaced);
    let only_errors = |errors: Errors| {
        errors.finish().err().map(syn::Error::into_compile_error).unwrap_or_default()
    };
    let input = match CoexecInput::parse(args, item) {
        Ok(i) => i,
        Err(e) => {
            errors.push(e);
            return Err(only_errors(errors));
        }
    };
    let checked = check::check(&input.options, &input.func, &mut errors);
    if !placed {
        // Where it stands the generated items are errors of their own: show the declaration's.
        return Err(only_errors(errors));
    }
    Ok((input, checked, errors))
}

pub fn coexec(args: TokenStream, item: TokenStream) -> TokenStream {
    let (input, checked, errors) = match coexec_checked(args, item) {
        Ok(checked) => checked,
        Err(errors) => return errors,
    };
    let CoexecInput { attrs, vis, func, .. } = &input;
    let parts = Parts::new(func, &checked);
    let Parts { global_ty, params, args, names, all_names, kernel_name, source, .. } = &parts;
    let build_options = &checked.build_options;
    let ident = &func.ident;
    let body = parts.launch_body(quote!(program), quote!(PARAMETERS));
    let decls = func.params.iter().map(|p| decl_tokens(p, &checked));
    let local = &checked.local;
    let mod_doc = format!(
        "Companions of [`{ident}()`]: its source, its cached program and its launch before it runs."
    );
    let extras = parts.extras(&checked);
    let on_session = session::coexec_items(&parts);
    let errors = errors.finish().err().map(syn::Error::into_compile_error);
    quote! {
        #errors
        #(#attrs)*
        #[allow(clippy::too_many_arguments)]
        #vis fn #ident(rt: &::hetdsl::Runtime, global: #global_ty, #(#params),*) -> ::hetdsl::Result<::hetdsl::Report> {
            let run = #ident::launch(rt, global, #(#names),*).and_then(::hetdsl::Launch::run);
            run.map_err(|e| ::hetdsl::__private::name_argument(e, #ident::PARAMETERS))
        }

        #[doc = #mod_doc]
        #vis mod #ident {
            #[allow(unused_imports)]
            use super::*;

            /// The kernel's name in the OpenCL source.
            pub const KERNEL: &str = #kernel_name;

            /// The parameters' names as declared, in the kernel's order (`__local` ones
            /// included): the function and `verify` name the argument at fault with them.
            pub const PARAMETERS: &[&str] = &[#(#all_names),*];

            /// The OpenCL source with its includes, as embedded at compile time.
            pub fn source() -> ::hetdsl::KernelSource {
                #source
            }

            /// The program for the devices of `rt`, built at the first call and kept for the rest
            /// of the process (one per distinct device selection).
            pub fn program(rt: &::hetdsl::Runtime) -> ::hetdsl::Result<&'static ::hetdsl::Program> {
                CACHE.get(rt, source, #build_options)
            }

            /// The programs built for each device selection; sessions are checked against them.
            static CACHE: ::hetdsl::__private::ProgramCache = ::hetdsl::__private::ProgramCache::new();

            /// Checks the kernel under co-execution: the function's launch once on one device
            /// alone and once co-executed with a deliberately uneven random split, every output
            /// compared (see [`::hetdsl::Launch::verify`]). Run it once per new kernel.
            #[allow(clippy::too_many_arguments)]
            pub fn verify(rt: &::hetdsl::Runtime, global: #global_ty, #(#params),*) -> ::hetdsl::Result<::hetdsl::Verification> {
                let verified = launch(rt, global, #(#names),*).and_then(::hetdsl::Launch::verify);
                verified.map_err(|e| ::hetdsl::__private::name_argument(e, PARAMETERS))
            }

            /// The launch the function would run, to adjust before `.run()`.
            #[allow(clippy::too_many_arguments)]
            pub fn launch<'a>(rt: &::hetdsl::Runtime, global: #global_ty, #(#args),*) -> ::hetdsl::Result<::hetdsl::Launch<'a>> {
                launch_on(program(rt)?, global, #(#names),*)
            }

            /// Builds another version of the kernel, read at run time (such as
            /// `KernelSource::from_file`), for every device of `rt`, after checking it against
            /// this declaration with the compile-time check's rules and words
            /// (`Error::SourceMismatch`, every problem). Run it with [`launch_on`].
            pub fn with_source(rt: &::hetdsl::Runtime, source: &::hetdsl::KernelSource) -> ::hetdsl::Result<::hetdsl::Program> {
                let declaration = [#(#decls),*];
                ::hetdsl::__private::check_source(source, #build_options, KERNEL, &[#(#local),*], &declaration)?;
                rt.program_with_options(source, #build_options)
            }

            /// The launch of this kernel on `program` (one [`with_source`] built), to adjust
            /// and `.run()`.
            #[allow(clippy::too_many_arguments)]
            pub fn launch_on<'a>(program: &'a ::hetdsl::Program, global: #global_ty, #(#args),*) -> ::hetdsl::Result<::hetdsl::Launch<'a>> {
                #body
            }

            #on_session
        }

        #extras
    }
}

/// The pieces both expansions share.
struct Parts<'a> {
    func: &'a Func,
    checked: &'a Checked,
    /// `usize` (1-D), `[usize; 2]` (2-D) or `[usize; 3]` (3-D).
    global_ty: TokenStream,
    /// `name: Type` of each host argument (`__local` buffers are not passed).
    params: Vec<TokenStream>,
    /// The same with references bound to `'a`.
    args: Vec<TokenStream>,
    names: Vec<syn::Ident>,
    /// Every parameter's name as declared, `__local` ones included.
    all_names: Vec<String>,
    kernel_name: String,
    source: TokenStream,
}

impl<'a> Parts<'a> {
    fn new(func: &'a Func, checked: &'a Checked) -> Self {
        let global_ty = match checked.local.len() {
            1 => quote!(usize),
            n => quote!([usize; #n]),
        };
        let mut params = Vec::new();
        let mut args = Vec::new();
        let mut names = Vec::new();
        for p in &func.params {
            let Param { ident, ty, role, lints } = p;
            // A buffer as a slice of its elements: a lifetime written in the declaration
            // (`&'a [f32]`) names none of the generated functions'.
            let (plain, bound) = match role {
                Role::Local { .. } => continue,
                Role::Value => (quote!(#ty), quote!(#ty)),
                Role::Buffer { dir: Direction::In, elem, .. } => {
                    (quote!(&[#elem]), quote!(&'a [#elem]))
                }
                Role::Buffer { elem, .. } => (quote!(&mut [#elem]), quote!(&'a mut [#elem])),
            };
            params.push(quote!(#(#lints)* #ident: #plain));
            args.push(quote!(#(#lints)* #ident: #bound));
            names.push(ident.clone());
        }
        let (name, text) = (&checked.source_name, &checked.source_text);
        Parts {
            func,
            checked,
            global_ty,
            params,
            args,
            names,
            all_names: func.params.iter().map(|p| p.ident.to_string()).collect(),
            kernel_name: checked.kernel_name.clone(),
            source: quote!(::hetdsl::KernelSource::embedded(#name, #text)),
        }
    }

    /// `Launch` construction from `program` (a `&Program` expression), arguments in order.
    /// The launch, built from `program`; `parameters` names the declared parameters' names,
    /// which the launch puts in its argument errors.
    fn launch_body(&self, program: TokenStream, parameters: TokenStream) -> TokenStream {
        let kernel = &self.kernel_name;
        let (global, local) = self.ndrange();
        let items_per_group: u64 = self.checked.local.iter().product();
        let refused = &self.checked.refused_merges;
        let args = self.func.params.iter().map(|p| arg_expr(p, items_per_group, refused));
        let patterns = self.patterns();
        let balancer = self.balancer();
        quote! {
            #(#patterns)*
            ::core::result::Result::Ok(
                (#program).launch(#kernel)
                    .global(#global)
                    .local(#local)
                    #(.arg(#args))*
                    .arg_names(#parameters)
                    #balancer
            )
        }
    }

    /// The launch's `&[usize]` global size (from the generated functions' `global`) and its
    /// declared work-group size.
    fn ndrange(&self) -> (TokenStream, TokenStream) {
        let local = self.checked.local.iter().map(|&n| n as usize);
        let global =
            if self.checked.local.len() == 1 { quote!(&[global]) } else { quote!(&global) };
        (global, quote!(&[#(#local),*]))
    }

    /// The statements computing the patterns whose sides are named (see `named_pattern`).
    fn patterns(&self) -> Vec<TokenStream> {
        let items_per_group: u64 = self.checked.local.iter().product();
        let refused = &self.checked.refused_patterns;
        let params = self.func.params.iter().enumerate();
        params.filter_map(|(index, p)| named_pattern(index, p, items_per_group, refused)).collect()
    }

    /// `.balancer(..)` of the declared balancer, if one is declared.
    fn balancer(&self) -> Option<TokenStream> {
        let spec = self.checked.balancer.as_ref()?;
        Some(quote!(.balancer(::hetdsl::__private::balancer(#spec)?)))
    }

    /// Layout assertions and rebuild tracking.
    fn extras(&self, checked: &Checked) -> TokenStream {
        let asserts = &checked.asserts;
        let files = checked.files.iter().filter_map(|f| f.to_str());
        quote! {
            #asserts
            // A change to the kernel source or an include rebuilds this crate.
            #(const _: &[u8] = ::core::include_bytes!(#files);)*
        }
    }
}

fn arg_expr(p: &Param, items_per_group: u64, refused_merges: &HashSet<String>) -> TokenStream {
    let ident = &p.ident;
    if let Role::Buffer { merge: Some(crate::parse::Merge { op: Some(op), .. }), .. } = &p.role {
        if !refused_merges.contains(&ident.to_string()) {
            // Every device writes the whole buffer; the runtime reduces the copies into it.
            let op = format_ident!("{}", op.variant());
            return quote!(::hetdsl::Arg::reduce(#ident, ::hetdsl::Merge::#op));
        }
    }
    // SAFETY (of the generated `unsafe` blocks): each type was checked against the kernel's
    // at compile time: primitives and arrays of them, or user types whose size, alignment, field
    // offsets and plain-data fields are asserted by the `const` items next to this code.
    match &p.role {
        Role::Value => quote! {
            ::hetdsl::Arg::Scalar(unsafe { ::hetdsl::__private::value_bytes(&#ident) })
        },
        Role::Buffer { dir, pattern, elem, .. } => {
            let pattern = match pattern {
                Pattern::Whole => quote!(::hetdsl::Pattern::Whole),
                // Its length is checked by the launch, as a session's is.
                Pattern::Halo(r) => quote!(::hetdsl::Pattern::halo(#r)),
                Pattern::Ratio(..) => match pattern.literal() {
                    Some((a, b)) => quote!(::hetdsl::Pattern::Ratio { a: #a, b: #b }),
                    // Computed and checked before the launch (see `named_pattern`).
                    None => pattern_var(ident),
                },
            };
            let elem_size = quote!(::core::mem::size_of::<#elem>());
            match dir {
                Direction::In => quote! {
                    ::hetdsl::Arg::In {
                        bytes: unsafe { ::hetdsl::__private::slice_bytes(#ident) },
                        elem: #elem_size,
                        pattern: #pattern,
                    }
                },
                Direction::Out | Direction::InOut => {
                    let d =
                        format_ident!("{}", if *dir == Direction::Out { "Out" } else { "InOut" });
                    quote! {
                        ::hetdsl::Arg::Out {
                            bytes: unsafe { ::hetdsl::__private::slice_bytes_mut(#ident) },
                            elem: #elem_size,
                            pattern: #pattern,
                            dir: ::hetdsl::Direction::#d,
                        }
                    }
                }
            }
        }
        Role::Local { elem, size: LocalSize::Fixed { count, .. }, .. } => {
            quote!(::hetdsl::Arg::Local((#count) * ::core::mem::size_of::<#elem>()))
        }
        Role::Local { elem, size: LocalSize::PerItem(k), .. } => {
            // The work-group size is fixed by the declaration, so the element count is too.
            let elems = k.saturating_mul(items_per_group) as usize;
            quote!(::hetdsl::Arg::Local(#elems * ::core::mem::size_of::<#elem>()))
        }
    }
}

/// A parameter as `hetdsl::__private::check_source` reads it.
fn decl_tokens(p: &Param, checked: &check::Checked) -> TokenStream {
    use hetdsl_decl::declcheck::{DeclRole, Dir, RustTy};
    let (d, elem) = check::decl_param(p);
    let private = quote!(::hetdsl::__private);
    let role = match &d.role {
        DeclRole::Value => quote!(#private::DeclRole::Value),
        DeclRole::Local => quote!(#private::DeclRole::Local),
        DeclRole::Buffer { dir, merge } => {
            let dir = format_ident!(
                "{}",
                match dir {
                    Dir::In => "In",
                    Dir::Out => "Out",
                    Dir::InOut => "InOut",
                }
            );
            let merge = match merge {
                Some((op, bitwise)) => {
                    quote!(::core::option::Option::Some((#op.to_string(), #bitwise)))
                }
                None => quote!(::core::option::Option::None),
            };
            quote!(#private::DeclRole::Buffer { dir: #private::Dir::#dir, merge: #merge })
        }
    };
    let text = |t: &Option<String>| match t {
        Some(t) => quote!(::core::option::Option::Some(#t.to_string())),
        None => quote!(::core::option::Option::None),
    };
    // A type the compiler proves to be a primitive (through an alias, `type Real = f32;`) is
    // that primitive for the run-time check, which sees no alias.
    let proved = checked.primitives.get(&p.ident.to_string()).map(|w| w.to_string());
    let ty = match (&d.ty, proved) {
        (RustTy::Path(_), Some(want)) => RustTy::Path(Some(want)),
        (RustTy::Array { len, .. }, Some(want)) => RustTy::Array { elem: Some(want), len: *len },
        (ty, _) => ty.clone(),
    };
    let ty = match &ty {
        RustTy::Path(name) => {
            let name = text(name);
            quote!(#private::RustTy::Path(#name))
        }
        RustTy::Array { elem, len } => {
            let elem = text(elem);
            let len = match len {
                Some(n) => quote!(::core::option::Option::Some(#n)),
                None => quote!(::core::option::Option::None),
            };
            quote!(#private::RustTy::Array { elem: #elem, len: #len })
        }
        RustTy::Other => quote!(#private::RustTy::Other),
    };
    let (name, ty_text, full_text) = (&d.name, &d.ty_text, &d.full_text);
    // Only a type already asserted plain data for a vector: asking any other type for its lanes
    // would repeat a "not plain data" error the declaration already has.
    let lanes = if checked.newtypes.contains(&p.ident.to_string()) {
        quote!(#private::pod_lanes::<#elem>())
    } else {
        quote!(#private::Lanes::Unknown)
    };
    quote! {
        #private::DeclArg {
            decl: #private::DeclParam {
                name: #name.to_string(),
                role: #role,
                ty: #ty,
                ty_text: #ty_text.to_string(),
                full_text: #full_text.to_string(),
            },
            size: ::core::mem::size_of::<#elem>(),
            align: ::core::mem::align_of::<#elem>(),
            lanes: #lanes,
        }
    }
}

/// The local holding the pattern of buffer `ident` when a side of it is a name.
fn pattern_var(ident: &syn::Ident) -> TokenStream {
    // Unraw: `r#type` cannot be pasted into another identifier.
    let var = format_ident!("__hetdsl_pattern_{}", syn::ext::IdentExt::unraw(ident));
    quote!(#var)
}

/// For a buffer whose pattern names a `const` or a scalar parameter: a statement that computes
/// the pattern when the kernel is called, checked as the macro checks literal ones (both sides
/// positive, the work-group split into whole elements), its error naming the parameter.
fn named_pattern(
    index: usize,
    p: &Param,
    items_per_group: u64,
    refused: &HashSet<String>,
) -> Option<TokenStream> {
    let Role::Buffer { pattern: pattern @ Pattern::Ratio(a, b), .. } = &p.role else {
        return None;
    };
    pattern.literal().is_none().then_some(())?;
    let ident = &p.ident;
    let var = pattern_var(ident);
    if refused.contains(&ident.to_string()) {
        // An error was reported on the name: a stand-in keeps the expansion quiet.
        return Some(quote!(let #var = ::hetdsl::Pattern::ONE_TO_ONE;));
    }
    let side = |s: &Side| match s {
        Side::Lit(n) => {
            let text = n.to_string();
            quote!((#text, ::hetdsl::__private::pattern_side(#n)))
        }
        Side::Name(name) => {
            let text = name.to_string();
            // Spanned on the name: an unknown name or a `const` of another type than an integer
            // is reported on it by the compiler.
            let value =
                quote::quote_spanned!(name.span()=> ::hetdsl::__private::pattern_side(#name));
            quote!((#text, #value))
        }
    };
    let (a, b) = (side(a), side(b));
    let name = ident.to_string();
    Some(quote! {
        let #var = ::hetdsl::__private::ratio(#index, #name, #a, #b, #items_per_group)?;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(decl: &str, items_per_group: u64) -> Vec<String> {
        let input: KernelInput = syn::parse_str(decl).expect("the declaration parses");
        input
            .func
            .params
            .iter()
            .map(|p| arg_expr(p, items_per_group, &HashSet::new()).to_string())
            .collect()
    }

    #[test]
    fn merged_outputs_expand_to_arg_reduce() {
        let got = args(
            r#"#[kernel(file = "k.cl", local = 64)] struct K { fn k(
                #[output(whole, merge = "sum")] a: &mut [u32],
                #[inout(whole, merge = "max")] b: &mut [f32],
                #[output(whole, merge = "min")] c: &mut [i64],
                #[output(whole, merge = "or")] d: &mut [u8],
                #[inout(whole, merge = "and")] e: &mut [u16]); }"#,
            64,
        );
        let want: Vec<String> = ["a Sum", "b Max", "c Min", "d Or", "e And"]
            .iter()
            .map(|s| {
                let (name, op) = s.split_once(' ').unwrap();
                format!(":: hetdsl :: Arg :: reduce ({name} , :: hetdsl :: Merge :: {op})")
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_refused_merge_expands_as_a_plain_output() {
        let input: KernelInput = syn::parse_str(
            r#"#[kernel(file = "k.cl", local = 64)] struct K { fn k(
                #[output(whole, merge = "or")] a: &mut [f32]); }"#,
        )
        .unwrap();
        let refused: HashSet<String> = ["a".to_string()].into();
        let got = arg_expr(&input.func.params[0], 64, &refused).to_string();
        assert!(got.starts_with(":: hetdsl :: Arg :: Out"), "{got}");
    }

    #[test]
    fn per_item_local_buffers_count_every_work_item_of_the_group() {
        let got = args(
            r#"#[kernel(file = "k.cl", local = [16, 8])] struct K { fn k(
                #[local(per_item = 2)] s: [f32],
                #[local] t: [u32; 128]); }"#,
            128,
        );
        assert_eq!(
            got,
            [
                ":: hetdsl :: Arg :: Local (256usize * :: core :: mem :: size_of :: < f32 > ())",
                ":: hetdsl :: Arg :: Local ((128) * :: core :: mem :: size_of :: < u32 > ())",
            ]
        );
    }
}
