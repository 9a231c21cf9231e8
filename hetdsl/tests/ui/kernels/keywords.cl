// Field names that are Rust keywords: the Rust struct spells them as raw identifiers.
typedef struct {
    int type;
    float match;
} Tagged;

__kernel void retag(__global Tagged* items, int to) {
    items[get_global_id(0)].type = to;
}
