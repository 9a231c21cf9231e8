//! The parser of declarations: walks the preprocessed tokens, reading `typedef`s, struct
//! definitions and `__kernel` signatures into a [`Source`] and skipping everything else
//! (function bodies, other declarations) by balanced brackets. Struct layout is computed by
//! the types module. Function bodies are kept for the reach module, which finds the writes
//! through each kernel's pointers.

use std::collections::{HashMap, HashSet};

use super::lex::{Kind, Tok};
use super::types::{self, Field, Scalar, StructDef, Ty};
use super::{expr, ndrange, reach, AddrSpace, Kernel, Param, ParseError, Pointer, Source};

mod words;
use words::{is_image_or_sampler, is_qualifier, type_text, PtrTypedef};

/// Reads the declarations of a preprocessed token stream.
pub(super) fn read(toks: Vec<Tok>) -> Result<Source, ParseError> {
    let mut p = Parser { toks, ..Parser::default() };
    p.top_level()?;
    reach::mark_writes(&mut p.src.kernels, &p.funcs, &p.kernel_funcs);
    for &(k, f) in &p.kernel_funcs {
        p.src.kernels[k].dims = ndrange::highest_dim(&p.funcs, f);
    }
    Ok(p.src)
}

#[derive(Default)]
struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    src: Source,
    /// The functions defined in the source, kernels included.
    funcs: Vec<reach::Func>,
    /// Each defined kernel's index in `src.kernels` and in `funcs`.
    kernel_funcs: Vec<(usize, usize)>,
    /// Typedef names of `const` types: `__global cfloat* p` points to data the kernel cannot
    /// write, as `__global const float* p` does.
    const_typedefs: HashSet<String>,
    /// Typedef names of pointer types: a parameter of one is a pointer.
    ptr_typedefs: HashMap<String, PtrTypedef>,
}

/// Declaration specifiers: the type and its qualifiers, before the declarator.
struct Spec {
    ty: Ty,
    is_const: bool,
    space: Option<AddrSpace>,
    access: Option<String>,
    /// The type is a typedef of a pointer; `ty` is then its pointee.
    ptr: Option<PtrTypedef>,
}

/// What follows the specifiers: pointers, name, array sizes.
struct Declarator {
    pointers: usize,
    name: Option<String>,
    dims: Vec<u64>,
}

/// Nesting limit for structs defined inside structs, so a hostile input cannot overflow the
/// stack.
const MAX_NESTING: usize = 64;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn peek_at(&self, ahead: usize) -> Option<&Tok> {
        self.toks.get(self.pos + ahead)
    }
    fn peek_at_abs(&self, pos: usize) -> Option<&Tok> {
        self.toks.get(pos)
    }
    fn peek_ident(&self) -> Option<&str> {
        self.peek().and_then(Tok::ident)
    }
    fn at_punct(&self, c: char) -> bool {
        self.peek().is_some_and(|t| t.is_punct(c))
    }
    fn line(&self) -> usize {
        self.peek().or(self.toks.last()).map_or(0, |t| t.line)
    }
    fn eat_punct(&mut self, c: char) -> bool {
        let at = self.at_punct(c);
        if at {
            self.pos += 1;
        }
        at
    }
    fn expect_punct(&mut self, c: char, what: &str) -> Result<(), ParseError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            let found =
                self.peek().map_or("the end of the file".into(), |t| format!("`{}`", t.text()));
            Err(ParseError::new(self.line(), format!("expected `{c}` {what}, found {found}")))
        }
    }

    /// Skips a balanced `(..)`, `{..}` or `[..]` group starting at the current token, returning
    /// its inner tokens. Any other token (a stray closer included) is skipped alone.
    fn skip_group(&mut self) -> Result<Vec<Tok>, ParseError> {
        let start = self.pos;
        let line = self.line();
        if !self.peek().is_some_and(|t| matches!(t.kind, Kind::Punct('(' | '{' | '['))) {
            self.pos = (self.pos + 1).min(self.toks.len());
            return Ok(Vec::new());
        }
        let mut depth = 0usize;
        while let Some(t) = self.toks.get(self.pos) {
            self.pos += 1;
            match t.kind {
                Kind::Punct('(' | '{' | '[') => depth += 1,
                Kind::Punct(')' | '}' | ']') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(self.toks[start + 1..self.pos - 1].to_vec());
                    }
                }
                _ => {}
            }
        }
        Err(ParseError::new(line, "unbalanced brackets"))
    }

    fn top_level(&mut self) -> Result<(), ParseError> {
        while let Some(t) = self.peek() {
            match (&t.kind, t.ident()) {
                (_, Some("typedef")) => {
                    let start = self.pos;
                    self.pos += 1;
                    // A typedef this reader cannot follow (function pointers…) is skipped: only
                    // a kernel that uses it would notice, as an unknown type.
                    if let Err(why) = self.typedef(0) {
                        self.pos = start + 1;
                        self.skip_to_semicolon()?;
                        // The name declared is the last word before the `;`.
                        let name = self.pos.checked_sub(2).and_then(|i| self.toks[i].ident());
                        if let Some(name) = name {
                            self.src.unread.insert(name.to_string(), why);
                        }
                    }
                }
                // `extern "C" {` (C++ linkage, usually under `#ifdef __cplusplus`): the braces
                // hold ordinary declarations, and the stray `}` is skipped below.
                (_, Some("extern"))
                    if self.peek_at(1).is_some_and(|t| t.text().starts_with('"'))
                        && self.peek_at(2).is_some_and(|t| t.is_punct('{')) =>
                {
                    self.pos += 3;
                }
                (_, Some("__kernel" | "kernel")) => {
                    self.pos += 1;
                    self.kernel()?;
                }
                // `void __kernel k(…)`: the qualifier may follow the return type.
                (_, Some("void"))
                    if self
                        .peek_at(1)
                        .and_then(Tok::ident)
                        .is_some_and(|w| matches!(w, "__kernel" | "kernel")) =>
                {
                    self.toks.swap(self.pos, self.pos + 1);
                }
                (_, Some("struct"))
                    if self.peek_at(1).is_some_and(|t| t.is_punct('{'))
                        || self.peek_at(2).is_some_and(|t| t.is_punct('{')) =>
                {
                    let start = self.pos;
                    if let Err(why) = self.specifiers(0) {
                        if let Some(tag) = self.peek_at_abs(start + 1).and_then(Tok::ident) {
                            self.src.unread.insert(format!("struct {tag}"), why);
                        }
                        self.pos = start + 1;
                    }
                    self.skip_to_semicolon()?;
                }
                (Kind::Punct('{' | '(' | '['), _) => {
                    self.skip_group()?;
                }
                _ => match reach::definition(&self.toks, self.pos) {
                    Some((func, end)) => {
                        self.funcs.push(func);
                        self.pos = end;
                    }
                    None => self.pos += 1,
                },
            }
        }
        Ok(())
    }

    /// Skips to just past the next `;` outside brackets (or to the end).
    fn skip_to_semicolon(&mut self) -> Result<(), ParseError> {
        while let Some(t) = self.peek() {
            match t.kind {
                Kind::Punct(';') => {
                    self.pos += 1;
                    return Ok(());
                }
                Kind::Punct('{' | '(' | '[') => {
                    self.skip_group()?;
                }
                _ => self.pos += 1,
            }
        }
        Ok(())
    }

    /// `typedef` specifiers declarator {, declarator} `;` (the keyword already read).
    fn typedef(&mut self, depth: usize) -> Result<(), ParseError> {
        let spec = self.specifiers(depth)?;
        loop {
            let d = self.declarator()?;
            let name =
                d.name.ok_or_else(|| ParseError::new(self.line(), "typedef without a name"))?;
            self.ptr_typedefs.remove(&name);
            let ty = if d.pointers > 0 || spec.ptr.is_some() {
                if d.dims.is_empty() {
                    let pt = spec.ptr.clone().unwrap_or(PtrTypedef {
                        pointee: spec.ty.clone(),
                        space: spec.space,
                        const_pointee: spec.is_const,
                        pointers: 0,
                    });
                    let pointers = pt.pointers + d.pointers;
                    self.ptr_typedefs.insert(name.clone(), PtrTypedef { pointers, ..pt });
                }
                Ty::Opaque(format!("{name} (a pointer typedef)"))
            } else {
                // `typedef struct { .. } Name;` names the anonymous struct.
                if let Ty::Struct(i) = spec.ty {
                    if let Some(def) = self.src.structs.get_mut(i) {
                        if def.name.is_empty() {
                            def.name = name.clone();
                        }
                    }
                }
                spec.ty.clone().array_of(&d.dims)
            };
            if spec.is_const && spec.ptr.is_none() && d.pointers == 0 {
                self.const_typedefs.insert(name.clone());
            } else {
                self.const_typedefs.remove(&name);
            }
            self.src.typedefs.insert(name, ty);
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct(';', "after a typedef")
    }

    fn kernel(&mut self) -> Result<(), ParseError> {
        let line = self.line();
        // From the attributes in front of the qualifier (read past), for `reqd_work_group_size`.
        let start = ndrange::attributes_before(&self.toks, self.pos.saturating_sub(1));
        let spec = match self.specifiers(0) {
            Ok(spec) => spec,
            Err(_) => return Ok(()),
        };
        if spec.ty != Ty::Void {
            // Not a kernel declaration (or not one this reader understands); keep scanning.
            return Ok(());
        }
        let Some(name) = self.peek_ident().map(str::to_string) else {
            return Ok(());
        };
        self.pos += 1;
        while self.peek_ident() == Some("__attribute__") {
            self.pos += 1;
            self.skip_group()?;
        }
        if !self.at_punct('(') {
            return Ok(());
        }
        let params_start = self.pos;
        let params = self.params();
        // Whatever happened inside, resume after the parameter list.
        self.pos = params_start;
        self.skip_group()?;
        while self.peek_ident() == Some("__attribute__") {
            self.pos += 1;
            self.skip_group()?;
        }
        let required_local = ndrange::required_local(&self.toks[start..self.pos]);
        let defined = self.at_punct('{');
        if defined {
            let body = self.skip_group()?;
            let names = params.iter().flatten().map(|p| p.name.clone()).collect();
            self.kernel_funcs.push((self.src.kernels.len(), self.funcs.len()));
            self.funcs.push(reach::Func { name: name.clone(), params: names, body });
        }
        let kernel = Kernel { name, line, params, defined, dims: None, required_local };
        self.src.kernels.push(kernel);
        Ok(())
    }

    fn params(&mut self) -> Result<Vec<Param>, ParseError> {
        self.expect_punct('(', "to open the parameter list")?;
        let mut params = Vec::new();
        if self.peek_ident() == Some("void") && self.peek_at(1).is_some_and(|t| t.is_punct(')')) {
            self.pos += 2;
            return Ok(params);
        }
        if self.eat_punct(')') {
            return Ok(params);
        }
        loop {
            params.push(self.param()?);
            if self.eat_punct(')') {
                return Ok(params);
            }
            self.expect_punct(',', "between parameters")?;
        }
    }

    fn param(&mut self) -> Result<Param, ParseError> {
        let start = self.pos;
        let line = self.line();
        let spec = self.specifiers(0)?;
        // Qualifiers after the `*` (`float *restrict x`) are about the pointer itself, not the data.
        let d = self.declarator_of(true)?;
        let name = d
            .name
            .clone()
            .ok_or_else(|| ParseError::new(line, "a kernel parameter needs a name"))?;
        let text = type_text(&self.toks[start..self.pos], &name);
        let mut unsupported = None;
        let image = match &spec.ty {
            Ty::Opaque(t) if is_image_or_sampler(t) => Some(t.clone()),
            _ => None,
        };
        // A parameter declared as an array is a pointer to its element (C11 6.7.6.3): `float
        // x[]` and `float x[4]` are `float* x`, `float m[][3]` points to `float[3]`s.
        let ty = spec.ty.clone().array_of(d.dims.get(1..).unwrap_or_default());
        let decayed = usize::from(!d.dims.is_empty());
        let pointers = d.pointers + decayed + spec.ptr.as_ref().map_or(0, |pt| pt.pointers);
        if let Some(t) = image.or_else(|| spec.access.as_ref().map(|a| format!("{a} image"))) {
            unsupported = Some(format!(
                "`{t}`: images and samplers are not supported by co-execution (hetdsl splits \
                 and merges buffers only); pass the pixels as a `__global` buffer instead"
            ));
        } else if pointers > 1 {
            unsupported =
                Some("a pointer to a pointer cannot be a hetdsl kernel argument".to_string());
        }
        // Through a pointer typedef the address space and `const` written in the typedef are
        // the pointee's; those written beside its name are the pointer's own.
        let pointer = (pointers > 0).then(|| match &spec.ptr {
            Some(pt) => Pointer {
                space: pt.space.unwrap_or(AddrSpace::Private),
                const_pointee: pt.const_pointee,
            },
            None => Pointer {
                space: spec.space.unwrap_or(AddrSpace::Private),
                const_pointee: spec.is_const,
            },
        });
        Ok(Param {
            name,
            value_space: if pointer.is_some() { None } else { spec.space },
            ty,
            pointer,
            unsupported,
            text,
            line,
            written_at: None,
            atomic_value_at: None,
            updates: Vec::new(),
            value_read_at: None,
        })
    }

    fn declarator(&mut self) -> Result<Declarator, ParseError> {
        self.declarator_of(false)
    }

    /// A declarator; a `parameter`'s first array size is not read, since it declares a
    /// pointer and the size means nothing there (`x[]`, `x[N]`, C99's `x[static 4]`).
    fn declarator_of(&mut self, parameter: bool) -> Result<Declarator, ParseError> {
        let mut pointers = 0;
        while self.eat_punct('*') {
            pointers += 1;
            while let Some(q) = self.peek_ident() {
                if !is_qualifier(q) && AddrSpace::from_name(q).is_none() {
                    break;
                }
                self.pos += 1;
            }
        }
        let name = self.peek_ident().map(str::to_string);
        if name.is_some() {
            self.pos += 1;
        }
        let mut dims = Vec::new();
        while self.at_punct('[') {
            let line = self.line();
            let inner = self.skip_group()?;
            if parameter && dims.is_empty() {
                dims.push(0);
                continue;
            }
            let n = expr::eval(&inner).and_then(|n| {
                u64::try_from(n).map_err(|_| format!("the array size is {n}, below zero"))
            });
            dims.push(n.map_err(|why| {
                ParseError::new(
                    line,
                    format!(
                        "cannot read the array size `{}`: {why} (an array size must be an \
                         integer constant expression of literals and #defines)",
                        type_text(&inner, "")
                    ),
                )
            })?);
        }
        Ok(Declarator { pointers, name, dims })
    }

    /// Declaration specifiers: qualifiers, address space, and one type (a keyword combination,
    /// a vector, a typedef name, a struct). An unknown name is taken as the type if no type was
    /// seen yet, and as the declarator's name otherwise.
    fn specifiers(&mut self, depth: usize) -> Result<Spec, ParseError> {
        let line = self.line();
        let mut spec = Spec { ty: Ty::Void, is_const: false, space: None, access: None, ptr: None };
        let mut ty: Option<Ty> = None;
        let mut sign: Option<bool> = None; // Some(true) = unsigned
        let mut words: Vec<&'static str> = Vec::new(); // char/short/int/long keywords
        while let Some(word) = self.peek_ident().map(str::to_string) {
            let w = word.as_str();
            if let Some(space) = AddrSpace::from_name(w) {
                spec.space = Some(space);
            } else if w == "const" {
                spec.is_const = true;
            } else if is_qualifier(w)
                || matches!(w, "static" | "inline" | "extern" | "__kernel" | "kernel")
            {
            } else if matches!(
                w,
                "read_only"
                    | "__read_only"
                    | "write_only"
                    | "__write_only"
                    | "read_write"
                    | "__read_write"
            ) {
                spec.access = Some(word.clone());
            } else if w == "__attribute__" {
                self.pos += 1;
                self.skip_group()?;
                continue;
            } else if w == "unsigned" || w == "signed" {
                sign = Some(w == "unsigned");
            } else if let Some(k @ ("char" | "short" | "int" | "long")) =
                ["char", "short", "int", "long"].into_iter().find(|k| *k == w)
            {
                words.push(k);
            } else if ty.is_some() || sign.is_some() || !words.is_empty() {
                break; // the declarator's name
            } else if w == "struct" || w == "union" {
                self.pos += 1;
                ty = Some(self.struct_specifier(w == "union", depth)?);
                continue;
            } else if w == "enum" {
                self.pos += 1;
                if self.peek_ident().is_some() {
                    self.pos += 1;
                }
                if self.at_punct('{') {
                    self.skip_group()?;
                }
                ty = Some(Ty::Scalar(Scalar::Int));
                continue;
            } else if w == "void" {
                ty = Some(Ty::Void);
            } else if let Some(s) = Scalar::from_name(w) {
                ty = Some(Ty::Scalar(s));
            } else if let Some((s, n)) = types::vector_from_name(w) {
                ty = Some(Ty::Vector(s, n));
            } else if let Some(pt) = self.ptr_typedefs.get(w) {
                ty = Some(pt.pointee.clone());
                spec.ptr = Some(pt.clone());
            } else if let Some(t) = self.src.typedefs.get(w) {
                ty = Some(t.clone());
                spec.is_const |= self.const_typedefs.contains(w);
            } else {
                ty = Some(Ty::Opaque(word.clone()));
            }
            self.pos += 1;
        }
        spec.ty = match (ty, sign, words.as_slice()) {
            (Some(t), None, []) => t,
            (None, _, []) => match sign {
                Some(true) => Ty::Scalar(Scalar::UInt),
                Some(false) => Ty::Scalar(Scalar::Int),
                None => {
                    let found = self
                        .peek()
                        .map_or("the end of the file".into(), |t| format!("`{}`", t.text()));
                    return Err(ParseError::new(line, format!("expected a type, found {found}")));
                }
            },
            (None, sign, words) => {
                // `short int`, `long int`, `unsigned long`: the first keyword decides the size.
                let base = match words[0] {
                    "char" => Scalar::Char,
                    "short" => Scalar::Short,
                    "long" => Scalar::Long,
                    _ => Scalar::Int,
                };
                Ty::Scalar(if sign == Some(true) { base.unsigned() } else { base })
            }
            (Some(_), _, _) => {
                return Err(ParseError::new(line, "conflicting type specifiers"));
            }
        };
        Ok(spec)
    }

    /// After `struct`/`union`: a tag, a definition, or both.
    fn struct_specifier(&mut self, union: bool, depth: usize) -> Result<Ty, ParseError> {
        let line = self.line();
        if depth > MAX_NESTING {
            return Err(ParseError::new(line, "structs nested too deeply"));
        }
        let mut attrs = self.attributes()?;
        let tag = self.peek_ident().map(str::to_string);
        if tag.is_some() {
            self.pos += 1;
        }
        let keyword = if union { "union" } else { "struct" };
        if !self.at_punct('{') {
            return Ok(match tag {
                Some(tag) => {
                    let name = format!("{keyword} {tag}");
                    match self.src.structs.iter().rposition(|s| s.name == name) {
                        Some(i) => Ty::Struct(i),
                        None => Ty::Opaque(name),
                    }
                }
                None => {
                    return Err(ParseError::new(
                        line,
                        format!("`{keyword}` without a tag or a body"),
                    ))
                }
            });
        }
        self.pos += 1;
        let mut fields = Vec::new();
        while !self.eat_punct('}') {
            if self.peek().is_none() {
                return Err(ParseError::new(line, format!("unterminated `{keyword}`")));
            }
            let spec = self.specifiers(depth + 1)?;
            loop {
                let field_line = self.line();
                let d = self.declarator()?;
                if self.at_punct(':') {
                    return Err(ParseError::new(field_line, "bit-fields are not supported"));
                }
                let name = d.name.unwrap_or_default();
                let ty = if d.pointers > 0 || spec.ptr.is_some() {
                    Ty::Opaque(format!("{name} (a pointer)"))
                } else {
                    spec.ty.clone().array_of(&d.dims)
                };
                fields.push(Field { name, ty, offset: None, line: field_line });
                if !self.eat_punct(',') {
                    break;
                }
            }
            self.expect_punct(';', "after a struct field")?;
        }
        attrs = attrs.and(self.attributes()?);
        let name = match (&tag, union) {
            (Some(tag), _) => format!("{keyword} {tag}"),
            (None, true) => "union".to_string(),
            (None, false) => String::new(),
        };
        if union {
            // Unions overlap their fields; kernels here never pass them, so leave them opaque.
            return Ok(Ty::Opaque(name));
        }
        let layout = types::lay_out(&mut fields, &self.src.structs, attrs.packed)
            .and_then(|l| attrs.realign(l));
        self.src.structs.push(StructDef { name, fields, layout, line });
        Ok(Ty::Struct(self.src.structs.len() - 1))
    }
}
