//! The words an agent reads: the instructions sent on `initialize`, the line for an agent's
//! own instructions (a CLAUDE.md), and each tool's description, all written from the pack,
//! as the seed's `mcp.Instructions` and `mcp.AgentLine` write them.

use crate::pack::Pack;

/// How many of the pack's examples the instructions show.
pub const EXAMPLES_SHOWN: usize = 2;

/// The paragraph on writing a program.
const HOW_TO_WRITE: &str = "Ask with the query tool, in Strata's Datalog. A program is rules, \
if any, then one goal: 'rule(?a, ?b) :- body; ... body => ?a, ?b'. Variables are ?name and \
strings are \"quoted\"; there's no \"?-\" before a goal, and its columns follow => without \
parentheses. Every row carries the facts it was derived from. A value the user gave goes in \
bind, by its variable's name, rather than into the program's text.";

/// The paragraph on calling schema first.
const SCHEMA_FIRST: &str = "Before writing a program, call schema with no path for every \
relation and module, and with a module's or relation's path for its members and docs.";

/// The paragraph on look, values, find, sample and explain.
const BEFORE_GUESSING: &str = "Before guessing a value, look describes a relation, values \
shows what one of its arguments holds and find what a name may stand for. To try a program, \
call query with sample: it runs on a few rows and says which part matched nothing. The \
explain tool says where a program's work went, and why its answer is empty.";

/// The instructions an agent reads when it connects: the pack's about, how to write a
/// program, to call schema first, the pack's first two examples, and where to look before
/// guessing a value. Paragraphs are separated by a blank line; no trailing newline.
pub fn instructions(pack: &Pack) -> String {
    let mut paragraphs: Vec<String> = Vec::new();
    if !pack.about.trim().is_empty() {
        paragraphs.push(pack.about.trim().to_owned());
    }
    paragraphs.push(HOW_TO_WRITE.to_owned());
    paragraphs.push(SCHEMA_FIRST.to_owned());
    if !pack.examples.is_empty() {
        let mut p = String::from("For example:");
        for e in pack.examples.iter().take(EXAMPLES_SHOWN) {
            p.push_str("\n  # ");
            p.push_str(e.question.trim());
            for line in e.program.trim().lines() {
                p.push_str("\n  ");
                p.push_str(line);
            }
        }
        paragraphs.push(p);
    }
    paragraphs.push(BEFORE_GUESSING.to_owned());
    paragraphs.join("\n\n")
}

/// The paragraph saying Cypher works, naming the graph's labels and relationship types
/// (`summary`, as [`strata_eval::cypher::Graph::summary`] writes it), or pointing at schema's
/// `cypher` path when the graph is not known yet.
pub fn cypher_paragraph(summary: Option<&str>) -> String {
    format!(
        "Or ask in Cypher with the cypher tool: MATCH, WHERE and RETURN over this graph, and it \
         answers with the program it ran. {}",
        summary.unwrap_or("Call schema with path cypher for its labels and relationship types.")
    )
}

/// The instructions with the Cypher paragraph added after the examples, as the seed places it.
pub fn with_cypher(instructions: &str, summary: Option<&str>) -> String {
    let para = cypher_paragraph(summary);
    match instructions.rfind("\n\nBefore guessing a value") {
        Some(at) => format!("{}\n\n{para}{}", &instructions[..at], &instructions[at..]),
        None => format!("{instructions}\n\n{para}"),
    }
}

/// The agent line of a server with the cypher tool: "..., then query, or cypher to ask in
/// Cypher."
pub fn cypher_agent_line(line: &str) -> String {
    match line.strip_suffix("then query.") {
        Some(head) => format!("{head}then query, or cypher to ask in Cypher."),
        None => line.to_owned(),
    }
}

/// The `cypher` tool's description, naming the graph's labels and relationship types.
pub fn cypher_description(pack: &Pack, summary: Option<&str>) -> String {
    format!(
        "Ask {about} in Cypher: MATCH (several patterns, OPTIONAL MATCH, labels, property \
         maps, types :A|B, either direction, variable length *1..3), WHERE (comparisons, AND, \
         OR, NOT, IN, STARTS WITH, ENDS WITH, CONTAINS, =~, IS NULL, patterns), RETURN \
         (aliases, DISTINCT, count, collect, min, max, sum, ORDER BY, SKIP, LIMIT) and one \
         WITH stage. It compiles the query to a Datalog program and runs it as query does: \
         the answer opens with ran: and the program, then the rows with their witnesses. \
         Give values in params ({{\"name\": \"value\"}}) as $name, never spliced into the \
         text. Read only: CREATE, MERGE, SET and DELETE are refused. {summary}",
        about = pack.about_or_default(),
        summary = summary.unwrap_or(
            "Call schema with path cypher for the graph's labels and relationship types."
        )
    )
}

/// A sentence for an agent's own instructions (a CLAUDE.md) saying when to use the server.
pub fn agent_line(pack: &Pack) -> String {
    format!(
        "For questions about {}, use the {} MCP server before searching files: it answers \
         exactly from its graph. Call its schema tool, then query.",
        pack.about_or_default(),
        pack.server_name()
    )
}

/// The `query` tool's description.
pub fn query_description(pack: &Pack) -> String {
    format!(
        "Run a Datalog program over {about} and answer a page of rows, each with the facts it \
         was derived from. A program is rules, if any, then one goal: \
         'rule(?a, ?b) :- body; ... body => ?a, ?b'.{example} Give a user's values in bind \
         ({{\"var\": \"value\"}}, a number or a list), never spliced into the text. limit and \
         max_work may ask for less than the server allows; an answer longer than a page ends \
         with a page_token to pass back. sample runs a try on a few rows and says which \
         literal matched nothing. json answers with columns, rows, witnesses, total, next and \
         the snapshot read.",
        about = pack.about_or_default(),
        example = match pack.examples.first() {
            Some(e) => format!(" For example, {}: {}", e.question.trim(), e.program.trim()),
            None => String::new(),
        }
    )
}

/// The `schema` tool's description.
pub fn schema_description(pack: &Pack) -> String {
    format!(
        "The relations and modules a program may use over {}. With no path: every relation \
         (columns, doc, size), every module's public members and the builtins. With a \
         module's path (deps) its members; with a relation's path (deps.depends_on, imports) \
         its signature, doc and rules. path data shows the pack: what the database is about \
         and its worked examples; path cypher the graph the cypher tool reads. Call it before \
         writing a program.",
        pack.about_or_default()
    )
}

/// The `explain` tool's description.
pub fn explain_description(pack: &Pack) -> String {
    format!(
        "Run a program over {} under max_work, with bind as query takes it, and answer where \
         the work went instead of its rows: how each relation was computed, the runs and \
         candidates of each rule and literal, and for an empty answer the literal that \
         matched nothing.",
        pack.about_or_default()
    )
}

/// The `look` tool's description.
pub fn look_description(pack: &Pack) -> String {
    format!(
        "Describe one relation or module of {}: its schema, and for a stored relation its \
         size, the distinct values per column and a few sample facts. Use it before guessing \
         what a relation's values look like.",
        pack.about_or_default()
    )
}

/// The `values` tool's description.
pub fn values_description(pack: &Pack) -> String {
    format!(
        "Up to limit (20) distinct values one argument of a relation of {} holds, so a program \
         can use a value as it is stored. target is relation.column (pkg.license) or \
         relation.N, N counting arguments from 1 (imports.2). The answer opens with the \
         program it ran, which query can page through.",
        pack.about_or_default()
    )
}

/// The `find` tool's description.
pub fn find_description(pack: &Pack) -> String {
    format!(
        "What a name may stand for in {}: ranked matches of a partial or misspelled name \
         against the stored text values, exact, last part (after / # :), prefix, substring, \
         words (split at / _ . : # - and case changes, so parse args finds \
         sym:src/cli.rs#parse_args), then edit distance, each with the relations and columns \
         it appears in and how many rows. Use it to ground a name the user gave before \
         writing a program with it; limit (10) caps the matches.",
        pack.about_or_default()
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The seed's `Example_mcpInstructions` output, with Strata's name for the language,
    /// find named as the seed names it for a pack with a Grounder (Strata always has one).
    /// The pack alone has no Cypher paragraph: the server adds it with the graph
    /// ([`with_cypher`]; `mcp/tests/tools.rs` checks the whole text).
    const SEED_INSTRUCTIONS: &str = r#"the packages of a Go service and what each imports

Ask with the query tool, in Strata's Datalog. A program is rules, if any, then one goal: 'rule(?a, ?b) :- body; ... body => ?a, ?b'. Variables are ?name and strings are "quoted"; there's no "?-" before a goal, and its columns follow => without parentheses. Every row carries the facts it was derived from. A value the user gave goes in bind, by its variable's name, rather than into the program's text.

Before writing a program, call schema with no path for every relation and module, and with a module's or relation's path for its members and docs.

For example:
  # what does api import?
  imports("api", ?d) => ?d

Before guessing a value, look describes a relation, values shows what one of its arguments holds and find what a name may stand for. To try a program, call query with sample: it runs on a few rows and says which part matched nothing. The explain tool says where a program's work went, and why its answer is empty."#;

    /// The seed's agent line, before the server adds "or cypher to ask in Cypher"
    /// ([`cypher_agent_line`]).
    const SEED_AGENT_LINE: &str = "For questions about the packages of a Go service and what each imports, use the deps MCP server before searching files: it answers exactly from its graph. Call its schema tool, then query.";

    fn example_pack() -> Pack {
        Pack::parse(strata_fixtures::example::PACK).unwrap()
    }

    #[test]
    fn instructions_are_the_seeds() {
        assert_eq!(instructions(&example_pack()), SEED_INSTRUCTIONS);
    }

    #[test]
    fn the_agent_line_is_the_seeds() {
        assert_eq!(agent_line(&example_pack()), SEED_AGENT_LINE);
    }

    #[test]
    fn only_the_first_two_examples_are_shown() {
        let mut pack = example_pack();
        for i in 0..3 {
            pack.examples.push(crate::pack::Example {
                question: format!("q{i}?"),
                program: format!("p{i}(?x) => ?x"),
            });
        }
        let text = instructions(&pack);
        assert!(text.contains(
            "  # what does api import?\n  imports(\"api\", ?d) => ?d\n  # q0?\n  p0(?x) => ?x\n\n"
        ));
        assert!(!text.contains("q1?"));
    }

    #[test]
    fn an_empty_pack_still_says_how_to_ask() {
        let text = instructions(&Pack::default());
        assert!(text.starts_with("Ask with the query tool"));
        assert!(!text.contains("For example"));
        assert_eq!(
            agent_line(&Pack::default()),
            "For questions about the facts of this database, use the strata MCP server before \
             searching files: it answers exactly from its graph. Call its schema tool, then query."
        );
    }
}
