//! The cycles of a graph: its strongly connected components, by Tarjan's algorithm kept on a
//! stack of its own (no recursion, so that a deep caller graph cannot overflow the thread's
//! stack). The estimated flame graph draws each cycle of functions calling each other as one
//! frame.

const NONE: u32 = u32::MAX;

/// The component of each of the `n` nodes of a graph whose edges `edge(v, i)` gives: the
/// `i`th edge of node `v` (`i` below `degree(v)`), `None` for one left out (a successor out of
/// range is too). Nodes in one cycle share a component; the others are alone in theirs. The
/// edges are read where they are (a caller graph's callee lists), not copied.
pub fn components(
    n: usize,
    degree: impl Fn(u32) -> usize,
    edge: impl Fn(u32, usize) -> Option<u32>,
) -> Vec<u32> {
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![NONE; n];
    let mut stack: Vec<u32> = Vec::new();
    // The walk: a node and the position of its next edge.
    let mut walk: Vec<(u32, usize)> = Vec::new();
    let mut next_index = 0u32;
    let mut next_comp = 0u32;
    for start in 0..n {
        if index[start] != NONE {
            continue;
        }
        index[start] = next_index;
        low[start] = next_index;
        next_index += 1;
        stack.push(start as u32);
        on_stack[start] = true;
        walk.push((start as u32, 0));
        while let Some(&(v, pos)) = walk.last() {
            let vu = v as usize;
            if pos < degree(v) {
                if let Some(top) = walk.last_mut() {
                    top.1 += 1;
                }
                let Some(w) = edge(v, pos).filter(|&w| (w as usize) < n) else {
                    continue;
                };
                let wu = w as usize;
                if index[wu] == NONE {
                    index[wu] = next_index;
                    low[wu] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[wu] = true;
                    walk.push((w, 0));
                } else if on_stack[wu] {
                    low[vu] = low[vu].min(index[wu]);
                }
                continue;
            }
            walk.pop();
            if let Some(&(u, _)) = walk.last() {
                low[u as usize] = low[u as usize].min(low[vu]);
            }
            if low[vu] == index[vu] {
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    comp[w as usize] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of_lists(succ: &[Vec<u32>]) -> Vec<u32> {
        components(
            succ.len(),
            |v| succ[v as usize].len(),
            |v, i| succ[v as usize].get(i).copied(),
        )
    }

    #[test]
    fn cycles_share_a_component_and_the_rest_are_alone() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3, 3 -> 3, 4 -> 0, 0 -> 9 (out of range).
        let succ = vec![vec![1, 9], vec![2], vec![1, 3], vec![3], vec![0]];
        let c = of_lists(&succ);
        assert_eq!(c[1], c[2]);
        let mut others = vec![c[0], c[1], c[3], c[4]];
        others.dedup();
        assert_eq!(others.len(), 4);
    }

    #[test]
    fn a_long_chain_needs_no_deep_stack() {
        let n = 200_000u32;
        let mut succ: Vec<Vec<u32>> = (0..n).map(|i| vec![i + 1]).collect();
        succ[(n - 1) as usize] = vec![0];
        let c = of_lists(&succ);
        assert!(c.iter().all(|&x| x == c[0]));
    }
}
