//! Builds an [`Expression`] tree from tokens by recursive descent over upstream's grammar
//! (`libcalico-go/lib/selector/parser/parser.go`): `||` over `&&` over single operations, each
//! operation optionally preceded by `!`s that toggle its negation.
//!
//! The tree comes out normalised, which is what makes the canonical form a fixed point of
//! parse-then-print: a one-element `&&`/`||` group is its element, a parenthesised expression is its
//! contents, sets are sorted and de-duplicated, and a negation of a negation cancels. (Upstream keeps
//! `!(!has(a))` as a double negation and prints `!!has(a)`, which re-parses as `has(a)`; the meaning
//! is the same either way.) Nesting depth is bounded so that hostile input cannot exhaust the stack.

use std::collections::BTreeSet;

use super::tokenizer::{LexError, Token, TokenKind, Tokenizer};
use super::{Expression, SelectorErrorKind};

/// The deepest parenthesis nesting accepted. Real selectors nest a handful of levels; the bound keeps
/// recursion (here, in printing and in evaluation) far from the stack limit.
pub const MAX_NESTING: usize = 128;

/// Parses a whole selector. The empty (or blank) selector is `all()`.
pub(super) fn parse(input: &str) -> Result<Expression, LexError> {
    let mut parser = Parser {
        tokens: Tokenizer::new(input),
        current: Token {
            kind: TokenKind::End,
            offset: 0,
        },
        depth: 0,
    };
    parser.advance()?;
    if parser.current.kind == TokenKind::End {
        return Ok(Expression::All);
    }
    let expression = parser.or_expression()?;
    match parser.current.kind {
        TokenKind::End => Ok(expression),
        found => Err(parser.error(SelectorErrorKind::ExpectedConjunction {
            found: found.describe(),
        })),
    }
}

struct Parser<'a> {
    tokens: Tokenizer<'a>,
    /// The token being looked at (one token of lookahead is all the grammar needs).
    current: Token<'a>,
    depth: usize,
}

impl<'a> Parser<'a> {
    /// Moves to the next token and returns the one that was current.
    fn advance(&mut self) -> Result<Token<'a>, LexError> {
        let next = self.tokens.next_token()?;
        Ok(std::mem::replace(&mut self.current, next))
    }

    fn error(&self, kind: SelectorErrorKind) -> LexError {
        LexError {
            offset: self.current.offset,
            kind,
        }
    }

    fn or_expression(&mut self) -> Result<Expression, LexError> {
        let mut operands = vec![self.and_expression()?];
        while self.current.kind == TokenKind::Or {
            self.advance()?;
            operands.push(self.and_expression()?);
        }
        Ok(group(operands, Expression::Or))
    }

    fn and_expression(&mut self) -> Result<Expression, LexError> {
        let mut operands = vec![self.operation()?];
        while self.current.kind == TokenKind::And {
            self.advance()?;
            operands.push(self.operation()?);
        }
        Ok(group(operands, Expression::And))
    }

    fn operation(&mut self) -> Result<Expression, LexError> {
        let mut negated = false;
        while self.current.kind == TokenKind::Not {
            negated = !negated;
            self.advance()?;
        }
        let expression = match self.current.kind {
            TokenKind::Has(label) => {
                self.advance()?;
                Expression::Has(label.to_string())
            }
            TokenKind::All => {
                self.advance()?;
                Expression::All
            }
            TokenKind::Global => {
                self.advance()?;
                Expression::Global
            }
            TokenKind::Label(label) => {
                self.advance()?;
                self.label_operation(label)?
            }
            TokenKind::LeftParen => {
                if self.depth == MAX_NESTING {
                    return Err(self.error(SelectorErrorKind::TooDeep { limit: MAX_NESTING }));
                }
                self.depth += 1;
                self.advance()?;
                let inner = self.or_expression()?;
                self.depth -= 1;
                if self.current.kind != TokenKind::RightParen {
                    return Err(self.error(SelectorErrorKind::ExpectedClosingParenthesis {
                        found: self.current.kind.describe(),
                    }));
                }
                self.advance()?;
                inner
            }
            found => {
                return Err(self.error(SelectorErrorKind::ExpectedOperation {
                    found: found.describe(),
                }));
            }
        };
        Ok(if negated {
            expression.negated()
        } else {
            expression
        })
    }

    /// What follows a label: a comparison with a string or a set membership test.
    fn label_operation(&mut self, label: &str) -> Result<Expression, LexError> {
        let operator = self.current.kind;
        let label = label.to_string();
        match operator {
            TokenKind::Equals
            | TokenKind::NotEquals
            | TokenKind::Contains
            | TokenKind::StartsWith
            | TokenKind::EndsWith => {
                self.advance()?;
                let TokenKind::String(value) = self.current.kind else {
                    return Err(self.error(SelectorErrorKind::ExpectedString {
                        found: self.current.kind.describe(),
                    }));
                };
                self.advance()?;
                let value = value.to_string();
                Ok(match operator {
                    TokenKind::Equals => Expression::Equals { label, value },
                    TokenKind::NotEquals => Expression::NotEquals { label, value },
                    TokenKind::Contains => Expression::Contains { label, value },
                    TokenKind::StartsWith => Expression::StartsWith { label, value },
                    _ => Expression::EndsWith { label, value },
                })
            }
            TokenKind::In | TokenKind::NotIn => {
                self.advance()?;
                let values = self.set_literal()?;
                Ok(if operator == TokenKind::In {
                    Expression::In { label, values }
                } else {
                    Expression::NotIn { label, values }
                })
            }
            // The tokenizer lets only an operator or the end follow a label, so this is the end.
            _ => Err(self.error(SelectorErrorKind::ExpectedOperator { label })),
        }
    }

    /// `{ "a", "b" }`; empty sets and a trailing comma are accepted, as upstream.
    fn set_literal(&mut self) -> Result<BTreeSet<String>, LexError> {
        if self.current.kind != TokenKind::LeftBrace {
            return Err(self.error(SelectorErrorKind::ExpectedSetLiteral {
                found: self.current.kind.describe(),
            }));
        }
        self.advance()?;
        let mut values = BTreeSet::new();
        while let TokenKind::String(value) = self.current.kind {
            values.insert(value.to_string());
            self.advance()?;
            if self.current.kind != TokenKind::Comma {
                break;
            }
            self.advance()?;
        }
        if self.current.kind != TokenKind::RightBrace {
            return Err(self.error(SelectorErrorKind::ExpectedClosingBrace {
                found: self.current.kind.describe(),
            }));
        }
        self.advance()?;
        Ok(values)
    }
}

/// One operand stands for itself; several form a group.
fn group(mut operands: Vec<Expression>, make: fn(Vec<Expression>) -> Expression) -> Expression {
    if operands.len() == 1 {
        operands.remove(0)
    } else {
        make(operands)
    }
}
