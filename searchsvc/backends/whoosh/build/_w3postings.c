/* A segment's posting lists and term index tables, encoded in C.
 *
 * A full build spends most of its time turning postings into Whoosh W3 posting blocks: ~340
 * postings a record, each a pickled positions list inside a pickled block tuple, compressed.
 * `encode_positions_field` takes a field's tokens as flat arrays (term rank, document,
 * position; tokens in document order) and returns what segment_postings.py's Python encoder
 * writes for the same postings: per term the W3 magic, then blocks of up to 128 postings, each
 * a `!i` length, the pickled block info (protocol 2, as Whoosh writes it) and the compressed
 * pickled (id deltas, weights, values) tuple, each posting's value the Positions
 * format's `pack_uint(len(deltas)) + pickle.dumps(deltas, 2)`. `encode_spelling_field` does the
 * same for a spelling field's words, `encode_plain_field` for any field whose postings carry a
 * weight and a fixed-size value or none (ID, KEYWORD, NUMERIC), and `hash_tables` writes the
 * hash tables of the term index (whoosh.filedb.filetables.HashWriter's).
 *
 * The pickles are written opcode by opcode as CPython's C pickler writes these objects (tuples
 * of up to 3 items by TUPLE1-3, longer ones between MARK and TUPLE; tuples and bytes memoized;
 * lists appended in batches of 1000). Block tuples use protocol 3, where bytes are raw
 * (SHORT_BINBYTES): Whoosh's writer uses protocol 2, which pickles each value as a call of
 * `_codecs.encode` on its Latin-1 text, so that blocks are 40% larger compressed, take twice as
 * long to compress and twice as long to unpickle. Whoosh's reader unpickles either.
 * Blocks are compressed by a Python function the caller passes (segment_postings.py's).
 *
 * tests/whoosh/test_native_postings.py holds this to the Python encoder's bytes on random fields, and
 * tests/whoosh/test_fast_writer.py holds whole segments to what Whoosh's own writer makes of the same
 * documents, read back through Whoosh.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define BLOCK_LIMIT 128   /* W3Codec's blocklimit */
#define LIST_BATCH 1000   /* the pickler's batch size for list items */
#define TERM_INFO_SIZE 35 /* struct "!BfIBBfII" (W3TermInfo) + "!qi" (offset, length) */

typedef struct {
    unsigned char *data;
    size_t len;
    size_t cap;
} Buffer;

static int reserve(Buffer *b, size_t extra) {
    if (b->len + extra <= b->cap) {
        return 0;
    }
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + extra) {
        cap *= 2;
    }
    unsigned char *data = PyMem_Realloc(b->data, cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

/* Writers below assume the caller reserved room for them. */
/* A buffer's bytes for Py_BuildValue's "y#", which turns a NULL pointer into None. */
#define DATA(buffer) ((const char *)((buffer).data ? (buffer).data : (unsigned char *)""))

static inline void put1(Buffer *b, unsigned char c) { b->data[b->len++] = c; }

static inline void put_bytes(Buffer *b, const void *p, size_t n) {
    if (n == 0) {
        return; /* p may be NULL: an empty buffer's data */
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void put_le32(Buffer *b, uint32_t v) {
    put1(b, v & 0xff);
    put1(b, (v >> 8) & 0xff);
    put1(b, (v >> 16) & 0xff);
    put1(b, v >> 24);
}

static inline void put_be32(unsigned char *p, uint32_t v) {
    p[0] = v >> 24;
    p[1] = (v >> 16) & 0xff;
    p[2] = (v >> 8) & 0xff;
    p[3] = v & 0xff;
}

static inline void put_be64(unsigned char *p, uint64_t v) {
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* -- pickle opcodes (protocols 2 and 3), as Modules/_pickle.c writes them ------------------ */
#define MAX_INT_SIZE 5
#define MAX_MEMO_SIZE 5

static inline void pickle_int(Buffer *b, uint32_t v) { /* 0 <= v < 2**31 */
    if (v <= 0xff) {
        put1(b, 'K');
        put1(b, (unsigned char)v);
    } else if (v <= 0xffff) {
        put1(b, 'M');
        put1(b, v & 0xff);
        put1(b, v >> 8);
    } else {
        put1(b, 'J');
        put_le32(b, v);
    }
}

static inline void pickle_float(Buffer *b, double d) { /* BINFLOAT: big-endian double */
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put1(b, 'G');
    put_be64(b->data + b->len, bits);
    b->len += 8;
}

static inline void memo_put(Buffer *b, uint32_t index) {
    if (index < 256) {
        put1(b, 'q');
        put1(b, (unsigned char)index);
    } else {
        put1(b, 'r');
        put_le32(b, index);
    }
}

static inline void memo_get(Buffer *b, uint32_t index) {
    if (index < 256) {
        put1(b, 'h');
        put1(b, (unsigned char)index);
    } else {
        put1(b, 'j');
        put_le32(b, index);
    }
}

static const unsigned char TUPLE_OF[4] = {0, 0x85, 0x86, 0x87}; /* TUPLE1..TUPLE3 */

/* Opening and closing of a tuple of n items (n >= 1); the close memoizes it. */
static inline void tuple_open(Buffer *b, Py_ssize_t n) {
    if (n > 3) {
        put1(b, '(');
    }
}

static inline void tuple_close(Buffer *b, Py_ssize_t n, uint32_t *memo) {
    put1(b, n > 3 ? 't' : TUPLE_OF[n]);
    memo_put(b, (*memo)++);
}

/* The Positions format's value of one posting: pack_uint(n) + pickle.dumps(deltas, 2). */
static size_t max_value_size(Py_ssize_t n) {
    return 4 + 5 + (size_t)n * MAX_INT_SIZE + 2 * ((size_t)n / LIST_BATCH + 1) + 1;
}

static void encode_value(Buffer *b, const int32_t *positions, const Py_ssize_t *order,
                         Py_ssize_t first, Py_ssize_t n) {
    put_be32(b->data + b->len, (uint32_t)n);
    b->len += 4;
    put_bytes(b, "\x80\x02]q\x00", 5);
    if (n == 1) {
        pickle_int(b, (uint32_t)positions[order[first]]);
        put1(b, 'a');
    } else {
        int32_t previous = 0;
        for (Py_ssize_t done = 0; done < n;) {
            put1(b, '(');
            for (Py_ssize_t k = 0; k < LIST_BATCH && done < n; k++, done++) {
                int32_t position = positions[order[first + done]];
                pickle_int(b, (uint32_t)(position - previous));
                previous = position;
            }
            put1(b, 'e');
        }
    }
    put1(b, '.');
}

/* Token numbers grouped by rank, stably: order[counts[r - 1] .. counts[r]) are rank r's tokens
 * (counts[-1] read as 0). Ranks must lie in [0, term_count) and docs must not descend. */
static int group_by_rank(const int32_t *ranks, const int32_t *docs, Py_ssize_t tokens,
                         Py_ssize_t term_count, Py_ssize_t doc_count, Py_ssize_t **counts_out,
                         Py_ssize_t **order_out) {
    Py_ssize_t *counts = PyMem_Calloc((size_t)term_count + 1, sizeof *counts);
    Py_ssize_t *order = PyMem_Malloc(((size_t)tokens + 1) * sizeof *order);
    *counts_out = counts;
    *order_out = order;
    if (counts == NULL || order == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t t = 0; t < tokens; t++) {
        if (ranks[t] < 0 || ranks[t] >= term_count) {
            PyErr_SetString(PyExc_ValueError, "a term rank is out of range");
            return -1;
        }
        if (docs[t] < 0 || docs[t] >= doc_count || (t && docs[t] < docs[t - 1])) {
            PyErr_SetString(PyExc_ValueError,
                            "tokens must come in document order, numbered below doc_count");
            return -1;
        }
        counts[ranks[t] + 1]++;
    }
    for (Py_ssize_t r = 0; r < term_count; r++) {
        counts[r + 1] += counts[r];
    }
    for (Py_ssize_t t = 0; t < tokens; t++) {
        order[counts[ranks[t]]++] = t;
    }
    /* counts[r] is now the end of rank r's tokens; rank r starts at counts[r - 1]. */
    for (Py_ssize_t r = 0; r < term_count; r++) {
        if (counts[r] == (r ? counts[r - 1] : 0)) {
            PyErr_SetString(PyExc_ValueError, "a term has no tokens");
            return -1;
        }
    }
    return 0;
}

static int put_term_info(Buffer *infos, double total_weight, Py_ssize_t postings, int min_length,
                         int max_length, double max_weight, int32_t first_doc, int32_t last_doc,
                         long long offset, size_t size) {
    /* W3TermInfo: "!BfIBBfII", then the term's offset and length in the file ("!qi"). */
    if (size > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a term's postings exceed 2 GiB");
        return -1;
    }
    unsigned char *info = infos->data + infos->len;
    float total = (float)total_weight, maximum = (float)max_weight;
    uint32_t bits;
    info[0] = 0;
    memcpy(&bits, &total, 4);
    put_be32(info + 1, bits);
    put_be32(info + 5, (uint32_t)postings);
    info[9] = (unsigned char)min_length;
    info[10] = (unsigned char)max_length;
    memcpy(&bits, &maximum, 4);
    put_be32(info + 11, bits);
    put_be32(info + 15, (uint32_t)first_doc);
    put_be32(info + 19, (uint32_t)last_doc);
    put_be64(info + 23, (uint64_t)offset);
    put_be32(info + 31, (uint32_t)size);
    infos->len += TERM_INFO_SIZE;
    return 0;
}

/* How blocks are compressed: a Python function called as function(data, level), returning the
 * zlib-format bytes (isal_zlib.compress; zlib.compress would do). `level` goes in the block
 * info, where Whoosh reads any non-zero value as "compressed". */
typedef struct {
    PyObject *function;
    int level;
} Compressor;

static int check_compressor(const Compressor *c) {
    if (!PyCallable_Check(c->function) || c->level < 1) {
        PyErr_SetString(PyExc_ValueError, "compress must be callable and level at least 1");
        return -1;
    }
    return 0;
}

/* Appends a block: its length ("!i", negative for a term's last block), `info`, then
 * `pickled` compressed. */
static int append_block(Buffer *out, const Compressor *c, const Buffer *pickled,
                        const Buffer *info, int last) {
    PyObject *data = PyObject_CallFunction(c->function, "y#i", (const char *)pickled->data,
                                           (Py_ssize_t)pickled->len, c->level);
    if (data == NULL) {
        return -1;
    }
    if (!PyBytes_Check(data)) {
        Py_DECREF(data);
        PyErr_SetString(PyExc_TypeError, "compress must return bytes");
        return -1;
    }
    size_t compressed = (size_t)PyBytes_GET_SIZE(data);
    if (info->len + compressed > INT32_MAX) {
        Py_DECREF(data);
        PyErr_SetString(PyExc_OverflowError, "a posting block exceeds 2 GiB");
        return -1;
    }
    if (reserve(out, 4 + info->len + compressed) < 0) {
        Py_DECREF(data);
        return -1;
    }
    int32_t size = (int32_t)(info->len + compressed);
    put_be32(out->data + out->len, (uint32_t)(last ? -size : size));
    out->len += 4;
    put_bytes(out, info->data, info->len);
    put_bytes(out, PyBytes_AS_STRING(data), compressed);
    Py_DECREF(data);
    return 0;
}

/* A bytes object at protocol 3: SHORT_BINBYTES below 256 bytes, else BINBYTES. */
static void put_binbytes(Buffer *b, const unsigned char *data, size_t size) {
    if (size < 256) {
        put1(b, 'C');
        put1(b, (unsigned char)size);
    } else {
        put1(b, 'B');
        put_le32(b, (uint32_t)size);
    }
    put_bytes(b, data, size);
}

/* The length-bytes argument: None (a field without lengths), or a byte per document. */
typedef struct {
    Py_buffer view;
    const unsigned char *bytes;
    Py_ssize_t count;
} LengthBytes;

static int get_length_bytes(PyObject *arg, LengthBytes *lengths) {
    memset(lengths, 0, sizeof *lengths);
    if (arg == Py_None) {
        return 0;
    }
    if (PyObject_GetBuffer(arg, &lengths->view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    lengths->bytes = lengths->view.buf;
    lengths->count = lengths->view.len;
    return 0;
}

static void release_length_bytes(LengthBytes *lengths) {
    if (lengths->view.obj != NULL) {
        PyBuffer_Release(&lengths->view);
    }
}

/* A document's length byte (0 without lengths); -1 and ValueError when it has none. */
static int length_of(const LengthBytes *lengths, int32_t doc) {
    if (lengths->bytes == NULL) {
        return 0;
    }
    if (doc >= lengths->count) {
        PyErr_SetString(PyExc_ValueError, "a document has postings but no length byte");
        return -1;
    }
    return lengths->bytes[doc];
}

/* A block tuple's first two items: the document numbers as differences (the first from 0),
 * then the weights: None when all are 1, one float when all are equal, else a tuple of floats
 * (W3PostingsWriter's _mini_ids and _mini_weights). */
static void pickle_ids_and_weights(Buffer *b, const int32_t *docs, const double *weights,
                                   Py_ssize_t n, uint32_t *memo) {
    tuple_open(b, n);
    int32_t previous = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        pickle_int(b, (uint32_t)(docs[i] - previous));
        previous = docs[i];
    }
    tuple_close(b, n, memo);
    int all_equal = 1;
    for (Py_ssize_t i = 1; i < n && all_equal; i++) {
        all_equal = weights[i] == weights[0];
    }
    if (all_equal) {
        if (weights[0] == 1.0) {
            put1(b, 'N');
        } else {
            pickle_float(b, weights[0]);
        }
        return;
    }
    tuple_open(b, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        pickle_float(b, weights[i]);
    }
    tuple_close(b, n, memo);
}

/* The largest weight and the smallest and largest length bytes of a block, or of a term. */
typedef struct {
    double max_weight;
    int min_length;
    int max_length;
} Extremes;

static const Extremes NO_POSTINGS = {0.0, 255, 0};

/* A block's extremes (its postings' weights, its documents' length bytes), folded into its
 * term's too; -1 and ValueError for a document without a length byte. */
static int block_extremes(const int32_t *docs, const double *weights, Py_ssize_t n,
                          const LengthBytes *lengths, Extremes *block, Extremes *term) {
    *block = NO_POSTINGS;
    block->max_weight = weights[0];
    for (Py_ssize_t i = 0; i < n; i++) {
        int length = length_of(lengths, docs[i]);
        if (length < 0) {
            return -1;
        }
        block->max_weight = weights[i] > block->max_weight ? weights[i] : block->max_weight;
        block->min_length = length < block->min_length ? length : block->min_length;
        block->max_length = length > block->max_length ? length : block->max_length;
    }
    term->max_weight = block->max_weight > term->max_weight ? block->max_weight : term->max_weight;
    term->min_length = block->min_length < term->min_length ? block->min_length : term->min_length;
    term->max_length = block->max_length > term->max_length ? block->max_length : term->max_length;
    return 0;
}

/* Appends a block whose (ids, weights, values) tuple is pickled in `pickled`, behind its info
 * (postings, last id, max weight, compression, min length, max length), pickled at protocol 2
 * as Whoosh writes it. */
static int append_postings_block(Buffer *out, const Compressor *c, const Buffer *pickled,
                                 Py_ssize_t n, int32_t last_doc, const Extremes *block,
                                 int last) {
    unsigned char info_bytes[64];
    Buffer info = {info_bytes, 0, sizeof info_bytes};
    put_bytes(&info, "\x80\x02(", 3);
    pickle_int(&info, (uint32_t)n);
    pickle_int(&info, (uint32_t)last_doc);
    pickle_float(&info, block->max_weight);
    pickle_int(&info, (uint32_t)c->level);
    pickle_int(&info, (uint32_t)block->min_length);
    pickle_int(&info, (uint32_t)block->max_length);
    put_bytes(&info, "tq\x00.", 4);
    return append_block(out, c, pickled, &info, last);
}

/* Starts a term's postings in `out` with the W3 magic; returns where the term starts. */
static int start_term(Buffer *out, const Py_buffer *magic, size_t *term_offset) {
    *term_offset = out->len;
    if (reserve(out, (size_t)magic->len) < 0) {
        return -1;
    }
    put_bytes(out, magic->buf, (size_t)magic->len);
    return 0;
}

static inline void put_le64(Buffer *b, uint64_t v) {
    put_le32(b, (uint32_t)v);
    put_le32(b, (uint32_t)(v >> 32));
}

/* -- positions fields --------------------------------------------------------------------- */
typedef struct {
    Compressor compressor;
    Buffer out;     /* the field's .pst bytes */
    Buffer pickled; /* one block's pickled tuple */
    Buffer values;  /* one block's posting values, back to back */
    /* The block being collected. */
    Py_ssize_t count;
    int32_t docs[BLOCK_LIMIT];
    double weights[BLOCK_LIMIT]; /* the frequencies, as the floats Whoosh pickles */
    size_t value_ends[BLOCK_LIMIT];
} Encoder;

static void encoder_free(Encoder *e) {
    PyMem_Free(e->out.data);
    PyMem_Free(e->pickled.data);
    PyMem_Free(e->values.data);
}

/* The block's (deltas, weights, values) tuple, pickled into e->pickled. */
static int pickle_block(Encoder *e) {
    Py_ssize_t n = e->count;
    Buffer *b = &e->pickled;
    size_t values_size = e->value_ends[n - 1];
    /* Per posting: an int, a float, a value and its opcodes (5 bytes) and memo (5 bytes). */
    b->len = 0;
    if (reserve(b, 64 + (size_t)n * (MAX_INT_SIZE + 9 + 10) + values_size) < 0) {
        return -1;
    }
    uint32_t memo = 0;
    put_bytes(b, "\x80\x03", 2);
    pickle_ids_and_weights(b, e->docs, e->weights, n, &memo);
    /* Values: each bytes object as SHORT_BINBYTES or BINBYTES. */
    tuple_open(b, n);
    size_t start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        put_binbytes(b, e->values.data + start, e->value_ends[i] - start);
        start = e->value_ends[i];
        memo_put(b, memo++);
    }
    tuple_close(b, n, &memo);
    put1(b, 0x87); /* TUPLE3: (deltas, weights, values) */
    memo_put(b, memo++);
    put1(b, '.');
    return 0;
}

/* Appends the collected block (its length, info and compressed data) to e->out. */
static int write_block(Encoder *e, const LengthBytes *lengths, int last, Extremes *term) {
    Py_ssize_t n = e->count;
    Extremes block;
    if (block_extremes(e->docs, e->weights, n, lengths, &block, term) < 0 ||
        pickle_block(e) < 0 ||
        append_postings_block(&e->out, &e->compressor, &e->pickled, n, e->docs[n - 1], &block,
                              last) < 0) {
        return -1;
    }
    e->count = 0;
    e->values.len = 0;
    return 0;
}

static PyObject *encode_positions_field(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer ranks_view = {0}, docs_view = {0}, positions_view = {0};
    Py_buffer magic_view = {0};
    Py_ssize_t term_count, doc_count;
    PyObject *lengths_arg;
    long long start_offset;
    PyObject *compress;
    int level, want_last_values;
    if (!PyArg_ParseTuple(args, "y*y*y*nnOLy*Oip", &ranks_view, &docs_view, &positions_view,
                          &term_count, &doc_count, &lengths_arg, &start_offset, &magic_view,
                          &compress, &level, &want_last_values)) {
        return NULL;
    }
    PyObject *result = NULL;
    LengthBytes lengths = {0};
    Py_ssize_t *counts = NULL, *order = NULL;
    int32_t *last_new = NULL;     /* per document: the rank of its last new term */
    size_t *last_value_at = NULL; /* per document: (offset, size) of its value in `candidates` */
    Encoder e;
    memset(&e, 0, sizeof e);
    Buffer infos = {0}, post_docs = {0}, post_freqs = {0}, term_ends = {0};
    Buffer candidates = {0}, last_values = {0}, last_value_ends = {0};

    if (get_length_bytes(lengths_arg, &lengths) < 0) {
        goto done;
    }
    Py_ssize_t tokens = ranks_view.len / 4;
    if (ranks_view.len % 4 || docs_view.len != ranks_view.len ||
        positions_view.len != ranks_view.len || term_count < 0 || doc_count < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "ranks, docs and positions must be int32 arrays of one length");
        goto done;
    }
    const int32_t *ranks = ranks_view.buf, *docs = docs_view.buf, *positions = positions_view.buf;
    if (group_by_rank(ranks, docs, tokens, term_count, doc_count, &counts, &order) < 0) {
        goto done;
    }
    for (Py_ssize_t t = 0; t < tokens; t++) {
        if (positions[t] < 0) {
            PyErr_SetString(PyExc_ValueError, "a position is negative");
            goto done;
        }
    }
    if (want_last_values) {
        /* Whoosh posts a text's spelling words with the value of the term that occurs first
         * last: scan each document's tokens (in position order) for new terms. */
        int32_t *seen_in = PyMem_Malloc(((size_t)term_count + 1) * sizeof *seen_in);
        last_new = PyMem_Malloc(((size_t)doc_count + 1) * sizeof *last_new);
        last_value_at = PyMem_Calloc(2 * ((size_t)doc_count + 1), sizeof *last_value_at);
        if (seen_in == NULL || last_new == NULL || last_value_at == NULL) {
            PyMem_Free(seen_in);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t r = 0; r < term_count; r++) {
            seen_in[r] = -1;
        }
        for (Py_ssize_t d = 0; d < doc_count; d++) {
            last_new[d] = -1;
        }
        for (Py_ssize_t t = 0; t < tokens; t++) {
            if (t && docs[t] == docs[t - 1] && positions[t] <= positions[t - 1]) {
                PyErr_SetString(PyExc_ValueError, "a document's positions must ascend");
                PyMem_Free(seen_in);
                goto done;
            }
            if (seen_in[ranks[t]] != docs[t]) {
                seen_in[ranks[t]] = docs[t];
                last_new[docs[t]] = ranks[t];
            }
        }
        PyMem_Free(seen_in);
    }

    e.compressor.function = compress;
    e.compressor.level = level;
    if (check_compressor(&e.compressor) < 0) {
        goto done;
    }
    if (reserve(&infos, (size_t)term_count * TERM_INFO_SIZE) < 0 ||
        reserve(&post_docs, (size_t)tokens * 4) < 0 ||
        reserve(&post_freqs, (size_t)tokens * 4) < 0 ||
        reserve(&term_ends, (size_t)term_count * 8) < 0) {
        goto done;
    }
    Py_ssize_t term_start = 0;
    for (Py_ssize_t r = 0; r < term_count; r++) {
        Py_ssize_t term_end = counts[r];
        size_t term_offset;
        if (start_term(&e.out, &magic_view, &term_offset) < 0) {
            goto done;
        }
        double total_weight = 0;
        Extremes term = NO_POSTINGS;
        Py_ssize_t posting_count = 0;
        int32_t first_doc = docs[order[term_start]], last_doc = first_doc;
        for (Py_ssize_t i = term_start; i < term_end;) {
            int32_t doc = docs[order[i]];
            Py_ssize_t j = i + 1;
            while (j < term_end && docs[order[j]] == doc) {
                if (positions[order[j]] <= positions[order[j - 1]]) {
                    PyErr_SetString(PyExc_ValueError,
                                    "a term's positions in a document must ascend");
                    goto done;
                }
                j++;
            }
            Py_ssize_t freq = j - i;
            if (reserve(&e.values, max_value_size(freq)) < 0) {
                goto done;
            }
            size_t value_start = e.values.len;
            encode_value(&e.values, positions, order, i, freq);
            if (last_new != NULL && last_new[doc] == r) {
                size_t size = e.values.len - value_start;
                if (reserve(&candidates, size) < 0) {
                    goto done;
                }
                last_value_at[2 * doc] = candidates.len;
                last_value_at[2 * doc + 1] = size;
                put_bytes(&candidates, e.values.data + value_start, size);
            }
            e.docs[e.count] = doc;
            e.weights[e.count] = (double)freq;
            e.value_ends[e.count] = e.values.len;
            e.count++;
            put_le32(&post_docs, (uint32_t)doc);
            put_le32(&post_freqs, (uint32_t)freq);
            total_weight += (double)freq;
            posting_count++;
            last_doc = doc;
            i = j;
            if (e.count == BLOCK_LIMIT || i == term_end) {
                if (write_block(&e, &lengths, i == term_end, &term) < 0) {
                    goto done;
                }
            }
        }
        if (put_term_info(&infos, total_weight, posting_count, term.min_length, term.max_length,
                          term.max_weight, first_doc, last_doc,
                          start_offset + (long long)term_offset, e.out.len - term_offset) < 0) {
            goto done;
        }
        put_le64(&term_ends, post_docs.len / 4);
        term_start = term_end;
    }
    if (last_new != NULL) {
        /* Each document's value, in document order, and each one's end. */
        if (reserve(&last_values, candidates.len) < 0 ||
            reserve(&last_value_ends, (size_t)doc_count * 8) < 0) {
            goto done;
        }
        for (Py_ssize_t d = 0; d < doc_count; d++) {
            put_bytes(&last_values, candidates.data + last_value_at[2 * d],
                      last_value_at[2 * d + 1]);
            uint64_t end = last_values.len;
            put_le64(&last_value_ends, end);
        }
    }
    result = Py_BuildValue("(y#y#y#y#y#y#y#)", DATA(e.out), (Py_ssize_t)e.out.len, DATA(infos),
                           (Py_ssize_t)infos.len, DATA(post_docs), (Py_ssize_t)post_docs.len,
                           DATA(post_freqs), (Py_ssize_t)post_freqs.len, DATA(term_ends),
                           (Py_ssize_t)term_ends.len, DATA(last_values),
                           (Py_ssize_t)last_values.len, DATA(last_value_ends),
                           (Py_ssize_t)last_value_ends.len);
done:
    encoder_free(&e);
    PyMem_Free(counts);
    PyMem_Free(order);
    PyMem_Free(last_new);
    PyMem_Free(last_value_at);
    PyMem_Free(infos.data);
    PyMem_Free(post_docs.data);
    PyMem_Free(post_freqs.data);
    PyMem_Free(term_ends.data);
    PyMem_Free(candidates.data);
    PyMem_Free(last_values.data);
    PyMem_Free(last_value_ends.data);
    PyBuffer_Release(&ranks_view);
    PyBuffer_Release(&docs_view);
    PyBuffer_Release(&positions_view);
    PyBuffer_Release(&magic_view);
    release_length_bytes(&lengths);
    return result;
}

/* -- other fields: one posting a token, a float weight and a fixed-size value or none -------- */
static int write_plain_block(Buffer *out, const Compressor *c, Buffer *pickled, const int32_t *docs,
                             const double *weights, const unsigned char *values,
                             Py_ssize_t value_size, Py_ssize_t n, int has_values,
                             const LengthBytes *lengths, int last, Extremes *term) {
    Extremes block;
    if (block_extremes(docs, weights, n, lengths, &block, term) < 0) {
        return -1;
    }
    Buffer *b = pickled;
    size_t values_size = has_values ? (size_t)(n * value_size) : 0;
    b->len = 0;
    if (reserve(b, 64 + (size_t)n * (MAX_INT_SIZE + 9) + values_size) < 0) {
        return -1;
    }
    uint32_t memo = 0;
    put_bytes(b, "\x80\x03", 2);
    pickle_ids_and_weights(b, docs, weights, n, &memo);
    if (has_values) {
        put_binbytes(b, values, values_size); /* the block's values joined as one bytes */
        memo_put(b, memo++);
    } else {
        put1(b, 'N');
    }
    put1(b, 0x87);
    memo_put(b, memo++);
    put1(b, '.');
    return append_postings_block(out, c, pickled, n, docs[n - 1], &block, last);
}

static PyObject *encode_plain_field(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer ranks_view = {0}, docs_view = {0}, weights_view = {0}, values_view = {0};
    Py_buffer magic_view = {0};
    Py_ssize_t term_count, doc_count, value_size;
    int has_values;
    PyObject *lengths_arg;
    long long start_offset;
    Compressor compressor;
    if (!PyArg_ParseTuple(args, "y*y*y*y*npnnOLy*Oi", &ranks_view, &docs_view, &weights_view,
                          &values_view, &value_size, &has_values, &term_count, &doc_count,
                          &lengths_arg, &start_offset, &magic_view, &compressor.function,
                          &compressor.level)) {
        return NULL;
    }
    PyObject *result = NULL;
    LengthBytes lengths = {0};
    Py_ssize_t *counts = NULL, *order = NULL;
    int32_t *block_docs = NULL;
    double *block_weights = NULL;
    Buffer out = {0}, infos = {0}, pickled = {0}, block_values = {0};
    Buffer post_docs = {0}, post_weights = {0}, term_ends = {0};
    if (get_length_bytes(lengths_arg, &lengths) < 0) {
        goto done;
    }
    Py_ssize_t tokens = ranks_view.len / 4;
    if (ranks_view.len % 4 || docs_view.len != ranks_view.len ||
        weights_view.len != tokens * 8 || value_size < 0 ||
        values_view.len != (has_values ? tokens * value_size : 0) || term_count < 0 ||
        doc_count < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "ranks and docs must be int32, weights float64, values value_size "
                        "bytes a token, all of one length");
        goto done;
    }
    const int32_t *ranks = ranks_view.buf, *docs = docs_view.buf;
    const double *weights = weights_view.buf;
    const unsigned char *values = values_view.buf;
    if (check_compressor(&compressor) < 0 ||
        group_by_rank(ranks, docs, tokens, term_count, doc_count, &counts, &order) < 0) {
        goto done;
    }
    block_docs = PyMem_Malloc(BLOCK_LIMIT * sizeof *block_docs);
    block_weights = PyMem_Malloc(BLOCK_LIMIT * sizeof *block_weights);
    if (block_docs == NULL || block_weights == NULL ||
        reserve(&block_values, BLOCK_LIMIT * (size_t)value_size + 1) < 0 ||
        reserve(&infos, (size_t)term_count * TERM_INFO_SIZE) < 0 ||
        reserve(&post_docs, (size_t)tokens * 4) < 0 ||
        reserve(&post_weights, (size_t)tokens * 8) < 0 ||
        reserve(&term_ends, (size_t)term_count * 8) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto done;
    }
    Py_ssize_t term_start = 0;
    for (Py_ssize_t r = 0; r < term_count; r++) {
        Py_ssize_t term_end = counts[r];
        size_t term_offset;
        if (start_term(&out, &magic_view, &term_offset) < 0) {
            goto done;
        }
        double total_weight = 0;
        Extremes term = NO_POSTINGS;
        for (Py_ssize_t begin = term_start; begin < term_end; begin += BLOCK_LIMIT) {
            Py_ssize_t n = term_end - begin < BLOCK_LIMIT ? term_end - begin : BLOCK_LIMIT;
            block_values.len = 0;
            if (begin > term_start && docs[order[begin]] <= docs[order[begin - 1]]) {
                PyErr_SetString(PyExc_ValueError, "a term has two postings in a document");
                goto done;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_ssize_t t = order[begin + i];
                if (i > 0 && docs[t] <= block_docs[i - 1]) {
                    PyErr_SetString(PyExc_ValueError, "a term has two postings in a document");
                    goto done;
                }
                block_docs[i] = docs[t];
                block_weights[i] = weights[t];
                total_weight += weights[t]; /* posting by posting, as the Python writer adds */
                if (has_values) {
                    put_bytes(&block_values, values + t * value_size, (size_t)value_size);
                }
                put_le32(&post_docs, (uint32_t)docs[t]);
                put_bytes(&post_weights, &weights[t], 8);
            }
            if (write_plain_block(&out, &compressor, &pickled, block_docs, block_weights,
                                  block_values.data, value_size, n, has_values, &lengths,
                                  begin + n >= term_end, &term) < 0) {
                goto done;
            }
        }
        if (put_term_info(&infos, total_weight, term_end - term_start, term.min_length,
                          term.max_length, term.max_weight, docs[order[term_start]],
                          docs[order[term_end - 1]], start_offset + (long long)term_offset,
                          out.len - term_offset) < 0) {
            goto done;
        }
        put_le64(&term_ends, post_docs.len / 4);
        term_start = term_end;
    }
    result = Py_BuildValue("(y#y#y#y#y#)", DATA(out), (Py_ssize_t)out.len, DATA(infos),
                           (Py_ssize_t)infos.len, DATA(post_docs), (Py_ssize_t)post_docs.len,
                           DATA(post_weights), (Py_ssize_t)post_weights.len, DATA(term_ends),
                           (Py_ssize_t)term_ends.len);
done:
    PyMem_Free(counts);
    PyMem_Free(order);
    PyMem_Free(block_docs);
    PyMem_Free(block_weights);
    PyMem_Free(out.data);
    PyMem_Free(infos.data);
    PyMem_Free(pickled.data);
    PyMem_Free(block_values.data);
    PyMem_Free(post_docs.data);
    PyMem_Free(post_weights.data);
    PyMem_Free(term_ends.data);
    PyBuffer_Release(&ranks_view);
    PyBuffer_Release(&docs_view);
    PyBuffer_Release(&weights_view);
    PyBuffer_Release(&values_view);
    PyBuffer_Release(&magic_view);
    release_length_bytes(&lengths);
    return result;
}

/* -- spelling fields ---------------------------------------------------------------------- */
typedef struct {
    const unsigned char *data;
    size_t size;
} Value;

static int compare_values(const void *a, const void *b) {
    const Value *x = a, *y = b;
    size_t common = x->size < y->size ? x->size : y->size;
    int order = memcmp(x->data, y->data, common);
    if (order) {
        return order;
    }
    return (x->size > y->size) - (x->size < y->size);
}

static PyObject *encode_spelling_field(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer ranks_view = {0}, docs_view = {0}, values_view = {0}, ends_view = {0};
    Py_buffer magic_view = {0};
    Py_ssize_t term_count;
    long long start_offset;
    Compressor compressor;
    if (!PyArg_ParseTuple(args, "y*y*ny*y*Ly*Oi", &ranks_view, &docs_view, &term_count,
                          &values_view, &ends_view, &start_offset, &magic_view,
                          &compressor.function, &compressor.level)) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t *counts = NULL, *order = NULL;
    Value *word_values = NULL;
    int64_t *value_ends = NULL;
    Buffer out = {0}, infos = {0}, pickled = {0};
    Py_ssize_t tokens = ranks_view.len / 4;
    Py_ssize_t doc_count = ends_view.len / 8;
    if (ranks_view.len % 4 || docs_view.len != ranks_view.len || ends_view.len % 8 ||
        term_count < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "ranks and docs must be int32 arrays of one length, ends int64");
        goto done;
    }
    const int32_t *ranks = ranks_view.buf, *docs = docs_view.buf;
    const unsigned char *values = values_view.buf;
    value_ends = PyMem_Malloc(((size_t)doc_count + 1) * sizeof *value_ends);
    if (value_ends == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(value_ends, ends_view.buf, (size_t)doc_count * 8); /* little-endian hosts */
    for (Py_ssize_t d = 0; d < doc_count; d++) {
        int64_t begin = d ? value_ends[d - 1] : 0;
        if (value_ends[d] < begin || value_ends[d] > values_view.len) {
            PyErr_SetString(PyExc_ValueError, "value ends must ascend within the values");
            goto done;
        }
    }
    if (check_compressor(&compressor) < 0 ||
        group_by_rank(ranks, docs, tokens, term_count, doc_count, &counts, &order) < 0) {
        goto done;
    }
    word_values = PyMem_Malloc(((size_t)tokens + 1) * sizeof *word_values);
    if (word_values == NULL || reserve(&infos, (size_t)term_count * TERM_INFO_SIZE) < 0) {
        if (word_values == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    Py_ssize_t word_start = 0;
    for (Py_ssize_t r = 0; r < term_count; r++) {
        /* The word's documents (once each) and their values, sorted as bytes. */
        Py_ssize_t count = 0;
        for (Py_ssize_t i = word_start; i < counts[r]; i++) {
            int32_t doc = docs[order[i]];
            if (i > word_start && doc == docs[order[i - 1]]) {
                continue;
            }
            int64_t begin = doc ? value_ends[doc - 1] : 0;
            word_values[count].data = values + begin;
            word_values[count].size = (size_t)(value_ends[doc] - begin);
            count++;
        }
        word_start = counts[r];
        qsort(word_values, (size_t)count, sizeof *word_values, compare_values);
        size_t term_offset;
        if (start_term(&out, &magic_view, &term_offset) < 0) {
            goto done;
        }
        for (Py_ssize_t begin = 0; begin < count; begin += BLOCK_LIMIT) {
            Py_ssize_t n = count - begin < BLOCK_LIMIT ? count - begin : BLOCK_LIMIT;
            size_t joined = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                joined += word_values[begin + i].size;
            }
            /* (ids: n zeros, weights: None, values: the block's values joined as one bytes) */
            pickled.len = 0;
            if (reserve(&pickled, 64 + 2 * (size_t)n + joined) < 0) {
                    goto done;
            }
            uint32_t memo = 0;
            put_bytes(&pickled, "\x80\x03", 2);
            tuple_open(&pickled, n);
            for (Py_ssize_t i = 0; i < n; i++) {
                put_bytes(&pickled, "K\x00", 2);
            }
            tuple_close(&pickled, n, &memo);
            put1(&pickled, 'N');
            if (joined < 256) {
                put1(&pickled, 'C');
                put1(&pickled, (unsigned char)joined);
            } else {
                put1(&pickled, 'B');
                put_le32(&pickled, (uint32_t)joined);
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                put_bytes(&pickled, word_values[begin + i].data, word_values[begin + i].size);
            }
            memo_put(&pickled, memo++);
            put1(&pickled, 0x87);
            memo_put(&pickled, memo++);
            put1(&pickled, '.');
            /* Block info: (postings, last id 0, max weight 1, compression, lengths 0 and 0). */
            unsigned char info_bytes[32];
            Buffer info = {info_bytes, 0, sizeof info_bytes};
            put_bytes(&info, "\x80\x02(", 3);
            pickle_int(&info, (uint32_t)n);
            put_bytes(&info, "K\x00K\x01", 4);
            pickle_int(&info, (uint32_t)compressor.level);
            put_bytes(&info, "K\x00K\x00tq\x00.", 8);
            if (append_block(&out, &compressor, &pickled, &info, begin + n >= count) < 0) {
                    goto done;
            }
        }
        if (put_term_info(&infos, (double)count, count, 0, 0, 1.0, 0, 0,
                          start_offset + (long long)term_offset, out.len - term_offset) < 0) {
            goto done;
        }
    }
    result = Py_BuildValue("(y#y#)", DATA(out), (Py_ssize_t)out.len, DATA(infos),
                           (Py_ssize_t)infos.len);
done:
    PyMem_Free(counts);
    PyMem_Free(order);
    PyMem_Free(word_values);
    PyMem_Free(value_ends);
    PyMem_Free(out.data);
    PyMem_Free(infos.data);
    PyMem_Free(pickled.data);
    PyBuffer_Release(&ranks_view);
    PyBuffer_Release(&docs_view);
    PyBuffer_Release(&values_view);
    PyBuffer_Release(&ends_view);
    PyBuffer_Release(&magic_view);
    return result;
}

/* -- the term index's hash tables ---------------------------------------------------------- */
static PyObject *hash_tables(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer hashes_view = {0}, positions_view = {0};
    long long start_offset;
    if (!PyArg_ParseTuple(args, "y*y*L", &hashes_view, &positions_view, &start_offset)) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t entries = hashes_view.len / 4;
    Py_ssize_t *order = NULL;
    uint32_t *slot_hashes = NULL;
    int64_t *slot_positions = NULL;
    Buffer tables = {0}, directory = {0};
    if (hashes_view.len % 4 || positions_view.len != entries * 8) {
        PyErr_SetString(PyExc_ValueError, "hashes must be uint32 and positions int64, one each");
        goto done;
    }
    const uint32_t *hashes = hashes_view.buf;
    const int64_t *positions = positions_view.buf;
    Py_ssize_t starts[257] = {0};
    for (Py_ssize_t i = 0; i < entries; i++) {
        starts[(hashes[i] & 255) + 1]++;
    }
    for (int b = 0; b < 256; b++) {
        starts[b + 1] += starts[b];
    }
    Py_ssize_t fill[256];
    memcpy(fill, starts, sizeof fill);
    order = PyMem_Malloc(((size_t)entries + 1) * sizeof *order);
    slot_hashes = PyMem_Malloc(((size_t)entries * 2 + 1) * sizeof *slot_hashes);
    slot_positions = PyMem_Malloc(((size_t)entries * 2 + 1) * sizeof *slot_positions);
    if (order == NULL || slot_hashes == NULL || slot_positions == NULL ||
        reserve(&tables, (size_t)entries * 2 * 12) < 0 || reserve(&directory, 256 * 12) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto done;
    }
    for (Py_ssize_t i = 0; i < entries; i++) {
        order[fill[hashes[i] & 255]++] = i; /* each bucket's entries in the order added */
    }
    for (int b = 0; b < 256; b++) {
        /* HashWriter._write_hashes: 2 slots an entry, linear probing from (hash >> 8) % slots,
         * an empty slot is (0, 0); each slot written as "!Iq" (hash, position). */
        Py_ssize_t count = starts[b + 1] - starts[b];
        Py_ssize_t slots = 2 * count;
        unsigned char *entry = directory.data + directory.len;
        put_be64(entry, (uint64_t)(start_offset + (long long)tables.len));
        put_be32(entry + 8, (uint32_t)slots);
        directory.len += 12;
        memset(slot_hashes, 0, (size_t)slots * sizeof *slot_hashes);
        memset(slot_positions, 0, (size_t)slots * sizeof *slot_positions);
        for (Py_ssize_t k = starts[b]; k < starts[b + 1]; k++) {
            Py_ssize_t i = order[k];
            Py_ssize_t slot = (Py_ssize_t)((hashes[i] >> 8) % (uint32_t)slots);
            while (slot_hashes[slot] != 0 || slot_positions[slot] != 0) {
                slot = (slot + 1) % slots;
            }
            slot_hashes[slot] = hashes[i];
            slot_positions[slot] = positions[i];
        }
        for (Py_ssize_t slot = 0; slot < slots; slot++) {
            unsigned char *out = tables.data + tables.len;
            put_be32(out, slot_hashes[slot]);
            put_be64(out + 4, (uint64_t)slot_positions[slot]);
            tables.len += 12;
        }
    }
    result = Py_BuildValue("(y#y#)", DATA(tables), (Py_ssize_t)tables.len, DATA(directory),
                           (Py_ssize_t)directory.len);
done:
    PyMem_Free(order);
    PyMem_Free(slot_hashes);
    PyMem_Free(slot_positions);
    PyMem_Free(tables.data);
    PyMem_Free(directory.data);
    PyBuffer_Release(&hashes_view);
    PyBuffer_Release(&positions_view);
    return result;
}

static PyMethodDef methods[] = {
    {"encode_positions_field", encode_positions_field, METH_VARARGS,
     "encode_positions_field(ranks, docs, positions, term_count, doc_count, length_bytes, "
     "start, magic, compress, level, last_values)\n--\n\n"
     "A positions field's W3 posting blocks from its tokens (int32 arrays: term rank, document, "
     "position; in document order). Returns (postings bytes, term infos: 35 bytes a term, "
     "posting documents, posting frequencies, each term's end in those (little-endian int32, "
     "int32, int64), and when `last_values`: each document's value of its last new term, "
     "joined, and each one's end (int64))."},
    {"encode_spelling_field", encode_spelling_field, METH_VARARGS,
     "encode_spelling_field(ranks, docs, term_count, values, value_ends, start, magic, "
     "compress, level)"
     "\n--\n\n"
     "A spelling field's W3 posting blocks: word rank and document of each word occurrence "
     "(int32, in document order), each document's posting value (joined, int64 ends). "
     "Returns (postings bytes, term infos: 35 bytes a word)."},
    {"encode_plain_field", encode_plain_field, METH_VARARGS,
     "encode_plain_field(ranks, docs, weights, values, value_size, has_values, term_count, "
     "doc_count, length_bytes, start, magic, compress, level)\n--\n\n"
     "A field's W3 posting blocks from its postings (int32 term rank and document, float64 "
     "weight, `value_size` bytes of value each when `has_values`; in document order), values "
     "joined per block, or None without values. Returns (postings bytes, term infos, posting "
     "documents int32, posting weights float64, each term's end in those int64)."},
    {"hash_tables", hash_tables, METH_VARARGS,
     "hash_tables(hashes, positions, start)\n--\n\n"
     "The 256 hash tables and their directory that whoosh.filedb.filetables.HashWriter writes "
     "at `start` for these entries (uint32 hashes, int64 record positions, native order)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_w3postings",
    "Whoosh W3 posting blocks and term index hash tables, encoded in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__w3postings(void) { return PyModule_Create(&module); }
