// Parallel Failureless Aho-Corasick (PFAC, Lin et al., GLOBECOM 2010): exact multi-pattern
// matching with one work-item per text position. Work-item `s` walks the pattern trie (no
// failure links) over text[s], text[s+1], ... until it falls into the trap state or the text
// ends, and records the last final state it passed: the longest pattern that starts at `s`.
//
// Table: `states * 256` ints, next = table[state * 256 + byte], -1 = trap. Final states are
// numbered 1..patterns (state number = pattern number), the initial state is patterns + 1.
// match[s] = that pattern number, or 0. Output 1:1; the walk may run past the package's end,
// so every device receives the whole text. The walk's length depends on the text: irregular.

#define TRAP (-1)

__kernel void pfac_match(__global const uchar *text,
                         const int text_len,
                         __global const int *table,
                         const int patterns,
                         const int initial_state,
                         __global int *match)
{
    const int start = (int)get_global_id(0);
    int found = 0;
    int state = initial_state;
    for (int pos = start; pos < text_len; ++pos) {
        state = table[state * 256 + text[pos]];
        if (state == TRAP) {
            break;
        }
        if (state <= patterns) {
            found = state;
        }
    }
    match[start] = found;
}
