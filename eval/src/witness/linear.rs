//! A linear walk's witness rebuilt in the recursion's own rules ([`reshape`]): the
//! `rewrite::linear` rewrite answers a linear recursion by a walk, whose facts (`@linear.`
//! relations) a reader was never told about, so each such premise is rewritten as the
//! chain of the recursive relation's facts it stands for.

use crate::rewrite::linear::{PREFIX, Walk};
use crate::witness::Node;

/// A witness premise of a relation this rewrite answers, rebuilt in the recursive
/// relation's own rules (see the module documentation); any other node is returned as it
/// is. `node` is a fact of the answering relation whose children are an exit rule's
/// premises and one `@linear` fact.
pub(crate) fn reshape(node: Node) -> Node {
    let Some(at) = node
        .children
        .iter()
        .position(|c| c.relation.starts_with(PREFIX))
    else {
        return node;
    };
    let Some(walk) = Walk::of_name(&node.children[at].relation) else {
        return node;
    };
    let Node {
        relation,
        values: answered,
        mut children,
        ..
    } = node;
    let values = |link: &Node| {
        let mut v = answered.clone();
        for (j, &c) in walk.moved.iter().enumerate() {
            if let (Some(slot), Some(x)) = (v.get_mut(c), link.values.get(j)) {
                *slot = x.clone();
            }
        }
        v
    };
    let mut link = children.remove(at);
    if walk.plus {
        // A fused walk's fact (the answer's only premise): its step's premises are the
        // exit rule's, and its own link leads on.
        let Some(j) = link
            .children
            .iter()
            .position(|c| c.relation.starts_with(PREFIX))
        else {
            return Node {
                relation,
                values: answered,
                children,
                flat: None,
            };
        };
        children = std::mem::take(&mut link.children);
        link = children.remove(j);
    }
    // The exit rule's fact, then one fact per link, each from the one before.
    let mut tree = Node {
        relation: relation.clone(),
        values: values(&link),
        children,
        flat: None,
    };
    while let Some(j) = link
        .children
        .iter()
        .position(|c| c.relation.starts_with(PREFIX))
    {
        let mut premises = std::mem::take(&mut link.children);
        let next = std::mem::replace(&mut premises[j], tree);
        tree = Node {
            relation: relation.clone(),
            values: values(&next),
            children: premises,
            flat: None,
        };
        link = next;
    }
    tree
}
