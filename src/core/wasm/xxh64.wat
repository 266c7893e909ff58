;; xxh64 (XXH64, seed 64-bit) and the chained block hashes of fleetroute's block scheme.
;;
;; Source of src/core/wasm/xxh64-module.ts (regenerate with `node scripts/build-wasm.mjs`;
;; test/core/block-hasher.test.ts fails when the two differ). Bit-identical to xxhash-wasm's h64.
;;
;; Exports:
;;   memory                         scratch memory, grown by the caller
;;   xxh64(ptr, len, seedLo, seedHi)  hash of [ptr, ptr+len); result stored at offset 0 (i64, LE)
;;   chain(tokens, page, count, seedLo, seedHi, out)
;;       block b (0 ≤ b < count) covers the `page` little-endian uint32 tokens at
;;       tokens + 4·page·b; its hash is xxh64 (seed 0) of the previous block's hash (the seed for
;;       b = 0) as a little-endian uint64, followed by those tokens. The 8 bytes before each block
;;       are overwritten with that hash (so [tokens − 8, tokens) must be free, and the tokens of
;;       block b − 1 are spent). Hash b is stored at out + 8·b (i64, LE).
(module
  (memory (export "memory") 1)

;; The rounds and merges of xxh64 are written out inline: calls inside a hot loop cost.
  (func $hash (param $ptr i32) (param $len i32) (param $seed i64) (result i64)
    (local $end i32) (local $limit i32) (local $h i64)
    (local $v1 i64) (local $v2 i64) (local $v3 i64) (local $v4 i64)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (if (i32.ge_u (local.get $len) (i32.const 32))
      (then
        (local.set $limit (i32.sub (local.get $end) (i32.const 32)))
        (local.set $v1 (i64.add (i64.add (local.get $seed) (i64.const 0x9E3779B185EBCA87)) (i64.const 0xC2B2AE3D27D4EB4F)))
        (local.set $v2 (i64.add (local.get $seed) (i64.const 0xC2B2AE3D27D4EB4F)))
        (local.set $v3 (local.get $seed))
        (local.set $v4 (i64.sub (local.get $seed) (i64.const 0x9E3779B185EBCA87)))
        (loop $stripes
          (local.set $v1 (i64.mul (i64.rotl (i64.add (local.get $v1) (i64.mul (i64.load (local.get $ptr)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $v2 (i64.mul (i64.rotl (i64.add (local.get $v2) (i64.mul (i64.load offset=8 (local.get $ptr)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $v3 (i64.mul (i64.rotl (i64.add (local.get $v3) (i64.mul (i64.load offset=16 (local.get $ptr)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $v4 (i64.mul (i64.rotl (i64.add (local.get $v4) (i64.mul (i64.load offset=24 (local.get $ptr)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $ptr (i32.add (local.get $ptr) (i32.const 32)))
          (br_if $stripes (i32.le_u (local.get $ptr) (local.get $limit))))
        (local.set $h
          (i64.add
            (i64.add (i64.rotl (local.get $v1) (i64.const 1)) (i64.rotl (local.get $v2) (i64.const 7)))
            (i64.add (i64.rotl (local.get $v3) (i64.const 12)) (i64.rotl (local.get $v4) (i64.const 18)))))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v1) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v2) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v3) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v4) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63))))
      (else
        (local.set $h (i64.add (local.get $seed) (i64.const 0x27D4EB2F165667C5)))))
    (local.set $h (i64.add (local.get $h) (i64.extend_i32_u (local.get $len))))
    (block $done8
      (loop $eights
        (br_if $done8 (i32.gt_u (i32.add (local.get $ptr) (i32.const 8)) (local.get $end)))
        (local.set $h
          (i64.add
            (i64.mul
              (i64.rotl
                (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (i64.load (local.get $ptr)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
                (i64.const 27))
              (i64.const 0x9E3779B185EBCA87))
            (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $ptr (i32.add (local.get $ptr) (i32.const 8)))
        (br $eights)))
    (if (i32.le_u (i32.add (local.get $ptr) (i32.const 4)) (local.get $end))
      (then
        (local.set $h
          (i64.add
            (i64.mul
              (i64.rotl
                (i64.xor (local.get $h)
                  (i64.mul (i64.load32_u (local.get $ptr)) (i64.const 0x9E3779B185EBCA87)))
                (i64.const 23))
              (i64.const 0xC2B2AE3D27D4EB4F))
            (i64.const 0x165667B19E3779F9)))
        (local.set $ptr (i32.add (local.get $ptr) (i32.const 4)))))
    (block $done1
      (loop $ones
        (br_if $done1 (i32.ge_u (local.get $ptr) (local.get $end)))
        (local.set $h
          (i64.mul
            (i64.rotl
              (i64.xor (local.get $h)
                (i64.mul (i64.load8_u (local.get $ptr)) (i64.const 0x27D4EB2F165667C5)))
              (i64.const 11))
            (i64.const 0x9E3779B185EBCA87)))
        (local.set $ptr (i32.add (local.get $ptr) (i32.const 1)))
        (br $ones)))
    (local.set $h (i64.mul (i64.xor (local.get $h) (i64.shr_u (local.get $h) (i64.const 33))) (i64.const 0xC2B2AE3D27D4EB4F)))
    (local.set $h (i64.mul (i64.xor (local.get $h) (i64.shr_u (local.get $h) (i64.const 29))) (i64.const 0x165667B19E3779F9)))
    (i64.xor (local.get $h) (i64.shr_u (local.get $h) (i64.const 32))))

  (func (export "xxh64") (param $ptr i32) (param $len i32) (param $seedLo i32) (param $seedHi i32)
    (i64.store (i32.const 0)
      (call $hash (local.get $ptr) (local.get $len)
        (i64.or
          (i64.shl (i64.extend_i32_u (local.get $seedHi)) (i64.const 32))
          (i64.extend_i32_u (local.get $seedLo))))))

  (func (export "chain") (param $tokens i32) (param $page i32) (param $count i32)
      (param $seedLo i32) (param $seedHi i32) (param $out i32)
    (local $prev i64) (local $ptr i32) (local $stride i32) (local $len i32) (local $end i32)
    (local.set $prev
      (i64.or
        (i64.shl (i64.extend_i32_u (local.get $seedHi)) (i64.const 32))
        (i64.extend_i32_u (local.get $seedLo))))
    (local.set $stride (i32.shl (local.get $page) (i32.const 2)))
    (local.set $len (i32.add (local.get $stride) (i32.const 8)))
    (local.set $ptr (i32.sub (local.get $tokens) (i32.const 8)))
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 3))))
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (i64.store (local.get $ptr) (local.get $prev))
        (local.set $prev (call $hash (local.get $ptr) (local.get $len) (i64.const 0)))
        (i64.store (local.get $out) (local.get $prev))
        (local.set $out (i32.add (local.get $out) (i32.const 8)))
        (local.set $ptr (i32.add (local.get $ptr) (local.get $stride)))
        (br $blocks))))
)
