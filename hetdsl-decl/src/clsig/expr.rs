//! Integer constant expressions as C's preprocessor evaluates them (`#if` conditions) and as
//! array sizes use them: literals, parentheses, unary `+ - ~ !`, the binary arithmetic,
//! shift, comparison, bitwise and logical operators, and `?:`, in C's precedence. Values are
//! C's `intmax_t` or, for a literal with a `u` suffix or too large for it and for whatever
//! mixes one in, `uintmax_t` (64 bits, wrapping), compared and divided as the type says;
//! dividing by zero is an error, not a guess. Identifiers must be resolved by the caller
//! (macros expanded, `defined` replaced).

use super::lex::{Kind, Tok};

/// Evaluates `toks` as one constant expression (an unsigned result as its bits); the error
/// says what is wrong.
pub fn eval(toks: &[Tok]) -> Result<i64, String> {
    if toks.is_empty() {
        return Err("an empty expression".into());
    }
    let mut p = Expr { toks, pos: 0, depth: 0 };
    let v = p.ternary()?;
    match p.toks.get(p.pos) {
        None => Ok(v.bits),
        Some(t) => Err(format!("unexpected `{}` in the expression", t.text())),
    }
}

/// A value of the expression: its 64 bits, and whether they are `uintmax_t`.
#[derive(Debug, Clone, Copy)]
struct Val {
    bits: i64,
    unsigned: bool,
}

impl Val {
    fn int(v: i64) -> Val {
        Val { bits: v, unsigned: false }
    }

    fn truth(b: bool) -> Val {
        Val::int(b as i64)
    }
}

/// A C integer literal (decimal, hex, octal or binary, with `u`/`l` suffixes).
pub fn int_literal(text: &str) -> Option<u64> {
    let t = text.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if let Some(bin) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(bin, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// Nesting limit of parentheses and unary operators, so a hostile input cannot overflow the
/// stack of the recursive descent.
const MAX_DEPTH: usize = 256;

struct Expr<'a> {
    toks: &'a [Tok],
    pos: usize,
    depth: usize,
}

/// Binary operators by precedence level, lowest first (`?:` is handled apart).
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Expr<'_> {
    /// The operator at the cursor: one punctuation character, or two when the second follows
    /// the first with no space (`&&`, `<=`, `<<`…).
    fn op(&self) -> Option<(String, usize)> {
        let c = match self.toks.get(self.pos)?.kind {
            Kind::Punct(c) => c,
            _ => return None,
        };
        if let Some(Tok { kind: Kind::Punct(d), glued: true, .. }) = self.toks.get(self.pos + 1) {
            let two: String = [c, *d].iter().collect();
            if matches!(two.as_str(), "&&" | "||" | "==" | "!=" | "<=" | ">=" | "<<" | ">>") {
                return Some((two, 2));
            }
        }
        Some((c.to_string(), 1))
    }

    fn deeper(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("an expression nested too deeply".into());
        }
        Ok(())
    }

    fn ternary(&mut self) -> Result<Val, String> {
        self.deeper()?;
        let cond = self.binary(0)?;
        let v = if self.op().is_some_and(|(o, _)| o == "?") {
            self.pos += 1;
            let yes = self.ternary()?;
            if self.op().is_none_or(|(o, _)| o != ":") {
                return Err("`?` without its `:`".into());
            }
            self.pos += 1;
            let no = self.ternary()?;
            // Either branch unsigned makes the result unsigned, as C's conversions do.
            let unsigned = yes.unsigned || no.unsigned;
            let v = if cond.bits != 0 { yes } else { no };
            Val { bits: v.bits, unsigned }
        } else {
            cond
        };
        self.depth -= 1;
        Ok(v)
    }

    fn binary(&mut self, level: usize) -> Result<Val, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Some((op, len)) = self.op().filter(|(o, _)| LEVELS[level].contains(&o.as_str())) {
            self.pos += len;
            let right = self.binary(level + 1)?;
            left = apply(&op, left, right)?;
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Val, String> {
        let Some(tok) = self.toks.get(self.pos) else {
            return Err("an expression that ends too early".into());
        };
        self.pos += 1;
        match &tok.kind {
            Kind::Number(text) => {
                if text.starts_with(['\'', '"']) {
                    return Err(format!("the literal {text} (only integers are read here)"));
                }
                let unsigned_suffix = text.trim_end_matches(['l', 'L']).ends_with(['u', 'U']);
                int_literal(text)
                    .map(|v| Val {
                        bits: v as i64,
                        unsigned: unsigned_suffix || v > i64::MAX as u64,
                    })
                    .ok_or_else(|| format!("`{text}` is not an integer literal"))
            }
            Kind::Ident(name) => Err(format!("`{name}` is not a constant")),
            Kind::Punct('(') => {
                let v = self.ternary()?;
                match self.toks.get(self.pos) {
                    Some(t) if t.is_punct(')') => {
                        self.pos += 1;
                        Ok(v)
                    }
                    _ => Err("a `(` without its `)`".into()),
                }
            }
            Kind::Punct(c @ ('+' | '-' | '~' | '!')) => {
                self.deeper()?;
                let v = self.unary()?;
                self.depth -= 1;
                Ok(match c {
                    '+' => v,
                    '-' => Val { bits: v.bits.wrapping_neg(), ..v },
                    '~' => Val { bits: !v.bits, ..v },
                    _ => Val::truth(v.bits == 0),
                })
            }
            Kind::Punct(c) => Err(format!("unexpected `{c}` in the expression")),
        }
    }
}

fn apply(op: &str, a: Val, b: Val) -> Result<Val, String> {
    // The usual conversions: one unsigned operand makes the operation unsigned.
    let unsigned = a.unsigned || b.unsigned;
    let (x, y) = (a.bits, b.bits);
    let (ux, uy) = (x as u64, y as u64);
    let cmp = |as_signed: bool, as_unsigned: bool| {
        Val::truth(if unsigned { as_unsigned } else { as_signed })
    };
    let arith = |bits: i64| Val { bits, unsigned };
    Ok(match op {
        "||" => Val::truth(x != 0 || y != 0),
        "&&" => Val::truth(x != 0 && y != 0),
        "|" => arith(x | y),
        "^" => arith(x ^ y),
        "&" => arith(x & y),
        "==" => Val::truth(x == y),
        "!=" => Val::truth(x != y),
        "<" => cmp(x < y, ux < uy),
        ">" => cmp(x > y, ux > uy),
        "<=" => cmp(x <= y, ux <= uy),
        ">=" => cmp(x >= y, ux >= uy),
        // A shift has its left operand's type.
        "<<" | ">>" if (b.unsigned && uy >= 64) || !(0..64).contains(&y) => {
            return Err(format!(
                "a shift by {} bits (0 to 63 are defined)",
                if b.unsigned { uy.to_string() } else { y.to_string() }
            ));
        }
        "<<" => Val { bits: x.wrapping_shl(y as u32), unsigned: a.unsigned },
        ">>" if a.unsigned => Val { bits: (ux >> y) as i64, unsigned: true },
        ">>" => Val::int(x.wrapping_shr(y as u32)),
        "+" => arith(x.wrapping_add(y)),
        "-" => arith(x.wrapping_sub(y)),
        "*" => arith(x.wrapping_mul(y)),
        "/" | "%" if y == 0 => return Err("a division by zero".into()),
        "/" if unsigned => arith((ux / uy) as i64),
        "%" if unsigned => arith((ux % uy) as i64),
        "/" => arith(x.wrapping_div(y)),
        "%" => arith(x.wrapping_rem(y)),
        _ => return Err(format!("unknown operator `{op}`")),
    })
}
