//! The session form of a declared kernel: the same launch over `hetdsl::Buffer`s that stay on
//! the devices. `kernel!` gets `session()` and `on(&session)`, which binds the struct to a
//! session of its own program as `{Struct}On<'s>`; `#[coexec]`'s module gets `session(&rt)`,
//! `on(&session)` and `On<'s>`. The bound type's `run` and `launch` take the one-shot ones'
//! arguments in the same order, each slice `&[T]` / `&mut [T]` as `&Buffer<T>` / `&mut Buffer<T>`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Visibility};

use super::{pattern_var, Parts};
use crate::parse::{Direction, LocalSize, Param, Pattern, Role};

/// `session`, `on` and the bound type of a `kernel!` struct.
pub(super) fn kernel_items(parts: &Parts, vis: &Visibility, name: &Ident) -> TokenStream {
    let on_ty = format_ident!("{name}On");
    let doc_on = format!(
        "[`{name}`] bound to a session of its program (from [`{name}::on`]): `run` and `launch` \
         as [`{name}::run`] and [`{name}::launch`], in the same order, with every buffer a \
         [`hetdsl::Buffer`] of the session that stays on the devices across launches."
    );
    let on = on_fn(
        parts,
        quote!(pub fn on<'s>(&self, session: &'s ::hetdsl::Session)),
        quote!(pub fn on<'s, S: ::hetdsl::__private::MergedOutputOnSession>(&self, session: &'s S)),
        quote!(#on_ty<'s>),
        |session| quote!(::hetdsl::__private::Bound::new(&self.program, #session, Self::KERNEL)?),
        quote!(#on_ty),
    );
    let methods = bound_methods(parts, quote!(#name::KERNEL), quote!(#name::PARAMETERS));
    quote! {
        impl #name {
            /// A session over every device of this kernel's program: buffers made with it
            /// (`session.buffer_from(&host)`) stay on the devices across launches; run the kernel
            /// on them through [`Self::on`].
            pub fn session(&self) -> ::hetdsl::Result<::hetdsl::Session> {
                self.program.session()
            }

            /// This kernel bound to `session`, for launches on its buffers. The session must be
            /// one of this value's program ([`Self::session`], or `program().session_on(..)`):
            /// another's is refused (`Error::BadConfig`), even of the same source.
            #on
        }

        #[doc = #doc_on]
        #[derive(Clone, Copy)]
        #vis struct #on_ty<'s> {
            bound: ::hetdsl::__private::Bound<'s>,
        }

        impl<'s> #on_ty<'s> {
            #methods
        }
    }
}

/// `session`, `on` and `On` inside a `#[coexec]` function's module.
pub(super) fn coexec_items(parts: &Parts) -> TokenStream {
    let ident = &parts.func.ident;
    let doc_on = format!(
        "[`{ident}()`](super::{ident}) bound to a session of its program (from [`on`]): `run` \
         and `launch` take the function's arguments after the runtime, in the same order, with \
         every buffer a [`hetdsl::Buffer`] of the session that stays on the devices."
    );
    let on = on_fn(
        parts,
        quote!(pub fn on(session: &::hetdsl::Session) -> ::hetdsl::Result<On<'_>>),
        quote!(pub fn on<S: ::hetdsl::__private::MergedOutputOnSession>(session: &S) -> ::hetdsl::Result<On<'_>>),
        quote!(),
        |session| quote!(::hetdsl::__private::Bound::cached(&CACHE, #session, KERNEL)?),
        quote!(On),
    );
    let methods = bound_methods(parts, quote!(KERNEL), quote!(PARAMETERS));
    quote! {
        /// A session over every device of the program for `rt` (see [`program`]): buffers made
        /// with it stay on the devices across launches; run the kernel on them through [`on`].
        pub fn session(rt: &::hetdsl::Runtime) -> ::hetdsl::Result<::hetdsl::Session> {
            program(rt)?.session()
        }

        /// The kernel bound to `session`, for launches on its buffers. The session must be one
        /// of a program this function built ([`session`], or `program(&rt)?.session_on(..)`):
        /// another's is refused (`Error::BadConfig`), even of the same source.
        #on

        #[doc = #doc_on]
        #[derive(Clone, Copy)]
        pub struct On<'s> {
            bound: ::hetdsl::__private::Bound<'s>,
        }

        impl<'s> On<'s> {
            #methods
        }
    }
}

/// `on`: `plain` with its body, or, for a kernel with a merged output (which a session cannot
/// hold), `merged`, whose bound nothing meets, so that calling it fails to compile saying why.
/// `ret`: the return type after `plain`/`merged` (empty when they include it); `bind`: the
/// `Bound` from a `&Session` expression.
fn on_fn(
    parts: &Parts,
    plain: TokenStream,
    merged: TokenStream,
    ret: TokenStream,
    bind: impl Fn(TokenStream) -> TokenStream,
    ctor: TokenStream,
) -> TokenStream {
    let ret = if ret.is_empty() { ret } else { quote!(-> ::hetdsl::Result<#ret>) };
    let has_merge = parts.func.params.iter().any(|p| {
        matches!(&p.role, Role::Buffer { merge: Some(m), .. } if m.op.is_some())
            && !parts.checked.refused_merges.contains(&p.ident.to_string())
    });
    let (head, session) = if has_merge {
        (merged, quote!(::hetdsl::__private::MergedOutputOnSession::session(session)))
    } else {
        (plain, quote!(session))
    };
    let bound = bind(session);
    quote! {
        #head #ret {
            ::core::result::Result::Ok(#ctor { bound: #bound })
        }
    }
}

/// `session`, `run` and `launch` of a bound type; `kernel` and `parameters` name the kernel
/// and the declared parameters' names.
fn bound_methods(parts: &Parts, kernel: TokenStream, parameters: TokenStream) -> TokenStream {
    let Parts { global_ty, names, .. } = parts;
    let mut args = Vec::new();
    let mut types = Vec::new();
    for p in &parts.func.params {
        let (ident, ty) = (&p.ident, &p.ty);
        let bound = match &p.role {
            Role::Local { elem, .. } => {
                types.push(elem);
                continue;
            }
            Role::Value => {
                types.push(ty);
                quote!(#ty)
            }
            Role::Buffer { dir, elem, .. } => {
                types.push(elem);
                let elem = lazy(elem);
                match dir {
                    Direction::In => quote!(&'a ::hetdsl::Buffer<#elem>),
                    _ => quote!(&'a mut ::hetdsl::Buffer<#elem>),
                }
            }
        };
        let lints = &p.lints;
        args.push(quote!(#(#lints)* #ident: #bound));
    }
    let wheres =
        quote!(where #(::hetdsl::__private::Lazy<'a, #types>: ::hetdsl::__private::Elem<#types>),*);
    let (global, local) = parts.ndrange();
    let patterns = parts.patterns();
    let balancer = parts.balancer();
    let calls = parts.func.params.iter().map(|p| arg_call(p, parts));
    quote! {
        /// The session the kernel is bound to: make its buffers with it.
        pub fn session(&self) -> &'s ::hetdsl::Session {
            self.bound.session()
        }

        /// Co-executes the kernel over `global` work-items on the session's devices, with the
        /// declared balancer (else the session's split learned from the previous launch). Each
        /// device receives only the input ranges it lacks; outputs stay on the devices that
        /// wrote them until read (`Buffer::to_vec`) or needed elsewhere.
        #[allow(clippy::too_many_arguments)]
        pub fn run<'a>(&'a self, global: #global_ty, #(#args),*) -> ::hetdsl::Result<::hetdsl::Report> #wheres {
            let run = self.launch(global, #(#names),*).and_then(::hetdsl::SessionLaunch::run);
            run.map_err(|e| ::hetdsl::__private::name_argument(e, #parameters))
        }

        /// As [`Self::run`], but returns as soon as nothing is left to decide: a relaunch that
        /// replays a balanced split is queued on the devices (see `SessionLaunch::submit`); its
        /// report comes from `Session::finish`.
        #[allow(clippy::too_many_arguments)]
        pub fn submit<'a>(&'a self, global: #global_ty, #(#args),*) -> ::hetdsl::Result<()> #wheres {
            let submit = self.launch(global, #(#names),*).and_then(::hetdsl::SessionLaunch::submit);
            submit.map_err(|e| ::hetdsl::__private::name_argument(e, #parameters))
        }

        /// The launch [`Self::run`] would run, to adjust before `.run()` (another balancer,
        /// fault injection).
        #[allow(clippy::too_many_arguments)]
        pub fn launch<'a>(&'a self, global: #global_ty, #(#args),*) -> ::hetdsl::Result<::hetdsl::SessionLaunch<'a>> #wheres {
            #(#patterns)*
            let session: &'a ::hetdsl::Session = self.bound.session();
            ::core::result::Result::Ok(
                session.launch(#kernel)
                    .global(#global)
                    .local(#local)
                    #(#calls)*
                    .arg_names(#parameters)
                    #balancer
            )
        }
    }
}

/// One argument's builder call on a `SessionLaunch`, typed: a buffer's element type and a
/// value's type are the declaration's, so the session's signature check sees what the one-shot
/// path's compile-time check proved.
fn arg_call(p: &Param, parts: &Parts) -> TokenStream {
    let ident = &p.ident;
    match &p.role {
        Role::Value => {
            let ty = &p.ty;
            quote!(.scalar(<::hetdsl::__private::Lazy<'a, #ty> as ::hetdsl::__private::Elem<#ty>>::cast(#ident)))
        }
        Role::Buffer { dir, pattern, .. } => {
            let pattern = match pattern {
                Pattern::Whole => quote!(::hetdsl::Pattern::Whole),
                Pattern::Halo(r) => quote!(::hetdsl::Pattern::halo(#r)),
                Pattern::Ratio(..) => match pattern.literal() {
                    Some((a, b)) => quote!(::hetdsl::Pattern::Ratio { a: #a, b: #b }),
                    None => pattern_var(ident),
                },
            };
            let call = match dir {
                Direction::In => quote!(input),
                Direction::Out => quote!(output),
                Direction::InOut => quote!(inout),
            };
            quote!(.#call(#ident, #pattern))
        }
        Role::Local { elem, size: LocalSize::Fixed { count, .. }, .. } => {
            let elem = lazy(elem);
            quote!(.local_buffer::<#elem>(#count))
        }
        Role::Local { elem, size: LocalSize::PerItem(k), .. } => {
            // The work-group size is fixed by the declaration, so the element count is too.
            let items: u64 = parts.checked.local.iter().product();
            let (elems, elem) = (k.saturating_mul(items) as usize, lazy(elem));
            quote!(.local_buffer::<#elem>(#elems))
        }
    }
}

/// `ty` as the session methods name it: through `Lazy<'a, _>`, so that its being plain data is
/// proved where a method is called, not again where it is declared (see `hetdsl::__private::Lazy`).
fn lazy(ty: &syn::Type) -> TokenStream {
    quote!(<::hetdsl::__private::Lazy<'a, #ty> as ::hetdsl::__private::Elem<#ty>>::T)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Checked;
    use crate::parse::KernelInput;

    #[test]
    fn each_role_becomes_its_session_builder_call() {
        let input: KernelInput = syn::parse_str(
            r#"#[kernel(file = "k.cl", local = [16, 4])] struct K { fn k(
                #[input(1:1, halo = 2)] a: &[f32],
                #[input(whole)] w: &[u8],
                #[output(4:1)] b: &mut [f32],
                #[inout(1:1)] c: &mut [i32],
                n: u32,
                #[local(per_item = 2)] s: [f32],
                #[local] t: [u32; 8]); }"#,
        )
        .expect("the declaration parses");
        let checked = Checked { local: vec![16, 4], ..Checked::default() };
        let parts = Parts::new(&input.func, &checked);
        let got: Vec<String> =
            input.func.params.iter().map(|p| arg_call(p, &parts).to_string()).collect();
        let lazy = |t: &str| {
            format!(
                "< :: hetdsl :: __private :: Lazy < 'a , {t} > as :: hetdsl :: __private :: Elem < {t} >>"
            )
        };
        assert_eq!(
            got,
            [
                ". input (a , :: hetdsl :: Pattern :: halo (2u64))".to_string(),
                ". input (w , :: hetdsl :: Pattern :: Whole)".to_string(),
                ". output (b , :: hetdsl :: Pattern :: Ratio { a : 4u64 , b : 1u64 })".to_string(),
                ". inout (c , :: hetdsl :: Pattern :: Ratio { a : 1u64 , b : 1u64 })".to_string(),
                format!(". scalar ({} :: cast (n))", lazy("u32")),
                format!(". local_buffer :: < {} :: T > (128usize)", lazy("f32")),
                format!(". local_buffer :: < {} :: T > (8)", lazy("u32")),
            ]
        );
    }
}
