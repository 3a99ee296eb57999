#!/usr/bin/env node
// Conformance vectors for formatId, from an independent JavaScript implementation of the reference.
//
// Usage: node id-vectors.cjs PREFIXES.json > cases.json
//   PREFIXES.json: a JSON array of the registered prefixes (build_conformance.py writes it from ID_ENTITIES).
//   stdout: {"seed", "alphabet", "human_id", "nanoid", "cases": [{prefix, random_hex, bytes_read, expected}]}
//
// formatId is reference-format-id.cjs: the real npm human-id@4.1.3 words and nanoid@3.3.11 customRandom,
// drawn exactly as the TypeScript reference formatId(prefix, random) draws them. The byte streams come from
// a seeded mulberry32, never Math.random, so running the script again gives the identical output.
'use strict'

const fs = require('fs')
const { ID_SUFFIX_ALPHABET, HUMAN_ID_VERSION, NANOID_VERSION, formatId } = require('./reference-format-id.cjs')

const SEED = 0x5eed1d05

function fail(message) {
  process.stderr.write(`id-vectors: ${message}\n`)
  process.exit(1)
}

// A source over a byte stream (explicit head bytes, then a generator), recording every byte handed out.
function recordingSource(head, tail) {
  const consumed = []
  const random = (n) => {
    const out = Buffer.alloc(n)
    for (let i = 0; i < n; i++) {
      const b = consumed.length < head.length ? head[consumed.length] : tail()
      if (!Number.isInteger(b) || b < 0 || b > 255) throw new Error(`bad stream byte ${b}`)
      out[i] = b
      consumed.push(b)
    }
    return out
  }
  return { random, consumed }
}

// Replays exactly the recorded bytes; asking for more than remain is an error.
function replaySource(bytes) {
  let offset = 0
  const random = (n) => {
    if (offset + n > bytes.length) throw new Error(`asked for ${n} bytes, ${bytes.length - offset} remain`)
    offset += n
    return Buffer.from(bytes.subarray(offset - n, offset))
  }
  return { random, read: () => offset }
}

function counting(start) {
  let next = start
  return () => next++ % 256
}

// The control vector, asserted before anything is written.
{
  const { random, consumed } = recordingSource([], counting(0))
  const got = formatId('user', random)
  if (got !== 'user-afraid-swans-nmkjhgfedcba' || consumed.length !== 22) {
    fail(`control vector: got ${got} after ${consumed.length} bytes`)
  }
}

function mulberry32(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const prefixesPath = process.argv[2]
if (!prefixesPath) fail('usage: node id-vectors.cjs PREFIXES.json')
const PREFIXES = JSON.parse(fs.readFileSync(prefixesPath, 'utf8'))
if (!Array.isArray(PREFIXES) || PREFIXES.length === 0) fail('PREFIXES.json must be a non-empty JSON array')
for (const p of PREFIXES) {
  if (typeof p !== 'string' || !/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(p) || p.length > 32) {
    fail(`not a well-formed prefix: ${JSON.stringify(p)}`)
  }
}

const rng = mulberry32(SEED)
const int = (lo, hi) => lo + Math.floor(rng() * (hi - lo + 1)) // inclusive
const byte = () => int(0, 255)
const acceptedAdjective = () => int(0, 199)
const rejectedAdjective = () => int(200, 255)
// A noun pair whose masked value is >= 300: first byte odd (bit 8 set), second byte >= 44 (256 + 44 = 300).
const rejectedNounPair = () => [int(0, 127) * 2 + 1, int(44, 255)]
const acceptedNounPair = () => {
  const value = int(0, 299)
  return [int(0, 127) * 2 + (value >> 8), value & 255]
}
const suffixRequest = () => Array.from({ length: 19 }, byte)
const repeat = (count, make) => Array.from({ length: count }, make).flat()

const cases = []
function addCase(head, tail = byte, prefix = PREFIXES[cases.length % PREFIXES.length]) {
  const { random, consumed } = recordingSource(head, tail)
  const expected = formatId(prefix, random)
  const bytes = Buffer.from(consumed)
  // Self-check: the recorded bytes alone reproduce the ID and are all consumed.
  const replay = replaySource(bytes)
  const again = formatId(prefix, replay.random)
  if (again !== expected || replay.read() !== bytes.length) fail(`replay mismatch for ${expected}`)
  if (!/^[a-z0-9-]+-[a-z]+-[a-z]+-[0-9abcdefghjkmnpqrstvwxyz]{12}$/.test(expected)) fail(`bad ID ${expected}`)
  cases.push({ prefix, random_hex: bytes.toString('hex'), bytes_read: bytes.length, expected })
}

// 1. The control vector first; then the counting source for every other prefix and from other starts
//    (a start at or above 200 rejects adjectives until the count wraps to 0).
addCase([], counting(0), 'user')
for (const p of PREFIXES) if (p !== 'user') addCase([], counting(0), p)
for (const start of [1, 7, 43, 44, 100, 198, 199, 200, 201, 222, 250, 255]) addCase([], counting(start))

// 2. Edge cases, each followed by fresh stream bytes.
const zeros = (n) => new Array(n).fill(0)
const ffs = (n) => new Array(n).fill(0xff)
const edges = [
  [199, ...acceptedNounPair()], // the last adjective
  [200, 199, ...acceptedNounPair()], // 200 is the first rejected value
  [200, 200, 200, 0], // three rejections, then the first adjective
  [0, 0x01, 0x2b], // masked noun 299: the last noun
  [0, 0x01, 0x2c, 0x01, 0x2b], // masked noun 300 rejected, then 299
  [199, 0xff, 0x2b], // masked noun 299 with the high bits set
  [199, 0xff, 0x2c, 0xfe, 0xff], // 0xff2c & 511 = 300 rejected; 0xfeff & 511 = 255 accepted
  [0, 0xfe, 0x00], // even high byte: masked noun 0
  [0, 0x00, 0xff], // masked noun 255
  [0, 0x01, 0x00], // masked noun 256
  [0, 0x00, 0x00, ...zeros(19)], // all zero: the first words and an all-zero suffix request
  [1, 0x00, 0x01, ...ffs(19)], // all-0xff suffix request
  [199, 0x01, 0x2b, ...ffs(19)], // last adjective, last noun, all-0xff suffix
  [5, 0x00, 0x05, ...repeat(7, () => 0xff), ...zeros(12)], // the first 7 bytes of the request are unused
  [5, 0x00, 0x05, ...zeros(7), ...ffs(12)],
  [9, 0x00, 0x09, ...Array.from({ length: 19 }, (_, i) => i * 13)], // bytes >= 32 are masked, never refused
  [9, 0x00, 0x09, 31, 32, 63, 64, 95, 96, 127, 128, 159, 160, 191, 192, 223, 224, 255, 0, 1, 2, 3],
  [...ffs(40), 0, ...ffs(2), 0x00, 0x00], // 40 rejected adjectives, one rejected noun pair 0xffff
  [...ffs(200), 199, ...ffs(60), 0x01, 0x2b, ...ffs(19)], // long 0xff runs everywhere
  [100, ...ffs(61), 0x2b], // odd run: the last 0xff pairs with 0x2b (masked 299)
  [100, ...ffs(61), 0x2c, 0x00, 0x00], // odd run: 0xff2c (masked 300) rejected too
  [100, ...ffs(62), 0x00, 0x00], // even run of rejected pairs
  [...repeat(30, () => [200, 255]), 0], // 60 alternating rejections at 200 and 255
  [0, ...repeat(20, () => [0x01, 0x2c]), 0x01, 0x2b], // 20 rejected pairs at exactly 300
  [0, ...repeat(20, () => [0xff, 0xff]), 0xfe, 0xff], // 20 rejected pairs at 511, then 255
]
for (const head of edges) addCase(head)

// 3. Uniform streams (about half of these reject at least once, as real draws do).
for (let i = 0; i < 400; i++) addCase([])

// 4. Rejection-heavy streams.
for (let i = 0; i < 150; i++) addCase([...repeat(int(1, 12), rejectedAdjective), acceptedAdjective()])
for (let i = 0; i < 150; i++) {
  addCase([acceptedAdjective(), ...repeat(int(1, 10), rejectedNounPair), ...acceptedNounPair()])
}
for (let i = 0; i < 150; i++) {
  addCase([
    ...repeat(int(1, 8), rejectedAdjective),
    acceptedAdjective(),
    ...repeat(int(1, 8), rejectedNounPair),
    ...acceptedNounPair(),
    ...suffixRequest(),
  ])
}
// Long runs of 0xff in the adjective, the noun or both; every fourth ends in an all-0xff suffix request.
for (let i = 0; i < 100; i++) {
  const where = i % 3
  const allFf = i % 4 === 0
  const head = []
  if (where !== 1) head.push(...ffs(int(1, 64)))
  head.push(acceptedAdjective())
  if (where !== 0) {
    // An odd run pairs its last 0xff with the next byte; before an all-0xff tail keep whole pairs.
    head.push(...ffs(allFf ? 2 * int(1, 32) : int(1, 64)))
  }
  if (allFf) head.push(...acceptedNounPair())
  addCase(head, allFf ? () => 0xff : byte)
}
// A stream biased towards high bytes: every draw is rejected much more often than uniform.
for (let i = 0; i < 100; i++) addCase([], () => (rng() < 0.75 ? int(200, 255) : byte()))

process.stdout.write(
  JSON.stringify({
    seed: SEED,
    alphabet: ID_SUFFIX_ALPHABET,
    human_id: HUMAN_ID_VERSION,
    nanoid: NANOID_VERSION,
    cases,
  }) + '\n',
)
