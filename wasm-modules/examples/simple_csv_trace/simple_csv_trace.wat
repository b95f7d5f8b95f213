;; simple_csv_trace: an example Lensfn user module written in WebAssembly text, to show
;; that the plugin ABI (wasm-modules/ABI.md, version 1) needs nothing from Go.
;;
;; Format: one request per line, "arrival_ms,input_tokens,output_tokens" as non-negative
;; integers; empty lines and lines starting with '#' are skipped. Arrival times are
;; normalised to the first request. Each request is its own single-turn session.
;;
;; Memory layout (64 KiB pages):
;;   16        descriptor JSON (274 bytes)
;;   1024      fixed error texts
;;   2048      error message being built (up to 1 KiB)
;;   4096      the current line, carried across lens_parse_feed calls (up to 4 KiB)
;;   65536     input buffer handed out by lens_buffer ($in_cap bytes)
;;   65536+$in_cap   output records of the last call (up to 10 x $in_cap + 64 KiB)
(module
  (memory (export "memory") 2)

  (global $in_cap (mut i32) (i32.const 0))
  (global $line (mut i64) (i64.const 0))
  (global $carry_len (mut i32) (i32.const 0))
  (global $out_len (mut i32) (i32.const 0))
  (global $have_zero (mut i32) (i32.const 0))
  (global $zero (mut i64) (i64.const 0))
  (global $err_len (mut i32) (i32.const 0))
  (global $active (mut i32) (i32.const 0))

  (data (i32.const 16) "{\"abi_version\":2,\"kind\":\"trace-parser\",\"name\":\"simple_csv_trace\",\"version\":\"1.0.0\",\"description\":\"Example user module in WebAssembly text: one request per line, arrival_ms,input_tokens,output_tokens\",\"capabilities\":{\"supports_trace_range\":true,\"supports_scale_factor\":true}}")
  (data (i32.const 1024) ": expected arrival_ms,input_tokens,output_tokens as non-negative integers")
  (data (i32.const 1152) ": longer than 4096 bytes")
  (data (i32.const 1280) ": arrival_ms is before the first request")
  (data (i32.const 1408) "lens_parse_feed or lens_parse_end called before lens_parse_begin")
  (data (i32.const 1536) "line ")

  (func (export "lens_abi_version") (result i32) (i32.const 2))

  (func (export "lens_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 274)))

  (func (export "lens_error") (result i64)
    (i64.or (i64.shl (i64.const 2048) (i64.const 32)) (i64.extend_i32_u (global.get $err_len))))

  ;; Packs the output region for the host.
  (func $output (result i64)
    (i64.or
      (i64.shl (i64.extend_i32_u (i32.add (i32.const 65536) (global.get $in_cap))) (i64.const 32))
      (i64.extend_i32_u (global.get $out_len))))

  ;; lens_buffer(size): the input buffer always starts at 65536; grow memory so that the
  ;; buffer and an output region of 10x its size fit.
  (func (export "lens_buffer") (param $size i32) (result i32)
    (local $pages i32)
    (if (i32.gt_u (local.get $size) (global.get $in_cap))
      (then
        (global.set $in_cap
          (i32.and (i32.add (local.get $size) (i32.const 65535)) (i32.const -65536)))
        ;; pages = (65536 + 11 * in_cap + 65536) / 65536
        (local.set $pages
          (i32.add (i32.const 2) (i32.div_u (i32.mul (global.get $in_cap) (i32.const 11)) (i32.const 65536))))
        (if (i32.gt_u (local.get $pages) (memory.size))
          (then
            (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
              (then unreachable))))))
    (i32.const 65536))

  (func (export "lens_parse_begin") (param $ptr i32) (param $len i32) (result i64)
    (global.set $line (i64.const 0))
    (global.set $carry_len (i32.const 0))
    (global.set $out_len (i32.const 0))
    (global.set $have_zero (i32.const 0))
    (global.set $active (i32.const 1))
    (i64.const 0))

  ;; Copies a fixed text to the end of the error message.
  (func $err_append (param $src i32) (param $n i32)
    (memory.copy (i32.add (i32.const 2048) (global.get $err_len)) (local.get $src) (local.get $n))
    (global.set $err_len (i32.add (global.get $err_len) (local.get $n))))

  ;; Builds "line <n><text>" and returns the ABI's failure value.
  (func $fail_line (param $src i32) (param $n i32) (result i64)
    (local $v i64) (local $digits i32) (local $i i32)
    (global.set $err_len (i32.const 0))
    (call $err_append (i32.const 1536) (i32.const 5))
    ;; decimal digits of $line, written backwards into 3072.. then copied forwards
    (local.set $v (global.get $line))
    (loop $d
      (i32.store8 (i32.sub (i32.const 3100) (local.get $digits))
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $d (i64.ne (local.get $v) (i64.const 0))))
    (call $err_append (i32.sub (i32.const 3101) (local.get $digits)) (local.get $digits))
    (call $err_append (local.get $src) (local.get $n))
    (global.set $active (i32.const 0))
    (i64.const -1))

  (func $fail_state (result i64)
    (global.set $err_len (i32.const 0))
    (call $err_append (i32.const 1408) (i32.const 64))
    (i64.const -1))

  ;; Writes one field: tag byte then 8 bytes little-endian; returns the next address.
  (func $field (param $at i32) (param $tag i32) (param $v i64) (result i32)
    (i32.store8 (local.get $at) (local.get $tag))
    (i64.store (i32.add (local.get $at) (i32.const 1)) (local.get $v))
    (i32.add (local.get $at) (i32.const 9)))

  ;; Parses the carried line; returns 0, or 1 after setting the error message.
  (func $finish_line (result i32)
    (local $n i32) (local $pos i32) (local $k i32) (local $c i32) (local $digits i32)
    (local $v i64) (local $arrival i64) (local $input i64) (local $out i64)
    (local $at i32) (local $rel f64)
    (local.set $n (global.get $carry_len))
    ;; strip one trailing CR
    (if (i32.and (i32.gt_u (local.get $n) (i32.const 0))
                 (i32.eq (i32.load8_u (i32.add (i32.const 4095) (local.get $n))) (i32.const 13)))
      (then (local.set $n (i32.sub (local.get $n) (i32.const 1)))))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (if (i32.eq (i32.load8_u (i32.const 4096)) (i32.const 35)) (then (return (i32.const 0))))
    (block $bad
      (loop $fields
        (local.set $v (i64.const 0))
        (local.set $digits (i32.const 0))
        (block $end_digits
          (loop $digit
            (br_if $end_digits (i32.ge_u (local.get $pos) (local.get $n)))
            (local.set $c (i32.load8_u (i32.add (i32.const 4096) (local.get $pos))))
            (br_if $end_digits (i32.or (i32.lt_u (local.get $c) (i32.const 48)) (i32.gt_u (local.get $c) (i32.const 57))))
            (br_if $bad (i32.ge_u (local.get $digits) (i32.const 18)))
            (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10))
                                   (i64.extend_i32_u (i32.sub (local.get $c) (i32.const 48)))))
            (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
            (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
            (br $digit)))
        (br_if $bad (i32.eqz (local.get $digits)))
        (if (i32.eqz (local.get $k)) (then (local.set $arrival (local.get $v))))
        (if (i32.eq (local.get $k) (i32.const 1)) (then (local.set $input (local.get $v))))
        (if (i32.eq (local.get $k) (i32.const 2)) (then (local.set $out (local.get $v))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (if (i32.lt_u (local.get $k) (i32.const 3))
          (then
            (br_if $bad (i32.ge_u (local.get $pos) (local.get $n)))
            (br_if $bad (i32.ne (i32.load8_u (i32.add (i32.const 4096) (local.get $pos))) (i32.const 44)))
            (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
            (br $fields))))
      (br_if $bad (i32.ne (local.get $pos) (local.get $n)))
      (if (i32.eqz (global.get $have_zero))
        (then (global.set $zero (local.get $arrival)) (global.set $have_zero (i32.const 1))))
      (if (i64.lt_u (local.get $arrival) (global.get $zero))
        (then (drop (call $fail_line (i32.const 1280) (i32.const 40))) (return (i32.const 1))))
      (local.set $rel (f64.convert_i64_u (i64.sub (local.get $arrival) (global.get $zero))))
      ;; record: u32 length 45, then line, arrival_ms, recorded_ms, input, output
      (local.set $at (i32.add (i32.add (i32.const 65536) (global.get $in_cap)) (global.get $out_len)))
      (i32.store (local.get $at) (i32.const 45))
      (local.set $at (i32.add (local.get $at) (i32.const 4)))
      (local.set $at (call $field (local.get $at) (i32.const 1) (global.get $line)))
      (local.set $at (call $field (local.get $at) (i32.const 4) (i64.reinterpret_f64 (local.get $rel))))
      (local.set $at (call $field (local.get $at) (i32.const 6) (i64.reinterpret_f64 (local.get $rel))))
      (local.set $at (call $field (local.get $at) (i32.const 7) (local.get $input)))
      (local.set $at (call $field (local.get $at) (i32.const 8) (local.get $out)))
      (global.set $out_len (i32.add (global.get $out_len) (i32.const 49)))
      (return (i32.const 0)))
    (drop (call $fail_line (i32.const 1024) (i32.const 73)))
    (i32.const 1))

  (func (export "lens_parse_feed") (param $ptr i32) (param $len i32) (result i64)
    (local $i i32) (local $c i32)
    (if (i32.eqz (global.get $active)) (then (return (call $fail_state))))
    (global.set $out_len (i32.const 0))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $c (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (if (i32.eq (local.get $c) (i32.const 10))
          (then
            (global.set $line (i64.add (global.get $line) (i64.const 1)))
            (if (call $finish_line) (then (return (i64.const -1))))
            (global.set $carry_len (i32.const 0))
            (br $bytes)))
        (if (i32.ge_u (global.get $carry_len) (i32.const 4096))
          (then
            (global.set $line (i64.add (global.get $line) (i64.const 1)))
            (return (call $fail_line (i32.const 1152) (i32.const 24)))))
        (i32.store8 (i32.add (i32.const 4096) (global.get $carry_len)) (local.get $c))
        (global.set $carry_len (i32.add (global.get $carry_len) (i32.const 1)))
        (br $bytes)))
    (call $output))

  (func (export "lens_parse_end") (result i64)
    (if (i32.eqz (global.get $active)) (then (return (call $fail_state))))
    (global.set $out_len (i32.const 0))
    (global.set $active (i32.const 0))
    (if (i32.gt_u (global.get $carry_len) (i32.const 0))
      (then
        (global.set $line (i64.add (global.get $line) (i64.const 1)))
        (if (call $finish_line) (then (return (i64.const -1))))))
    (global.set $carry_len (i32.const 0))
    (call $output))
)
