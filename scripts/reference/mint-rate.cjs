#!/usr/bin/env node
// Mint rate of the TypeScript reference's formatId on Node, for the ">= 10x the reference" minting goal
// (docs/benchmarks.md, "IDs").
//
// Usage: npm ci && node mint-rate.cjs [COUNT] [ROUNDS]
//   stdout: one JSON line {"node", "count", "rounds", "rates", "median_per_second"}
//
// formatId is the reference's draw exactly as id-vectors.cjs writes it (human-id@4.1.3's words, index() by
// rejection sampling, nanoid@3.3.11 customRandom for the suffix), with Node's CSPRNG as the random source:
// random(n) = crypto.randomBytes(n), one call per read, as the reference reads its source.
'use strict'

const crypto = require('crypto')
const { adjectives: rawAdjectives, nouns: rawNouns } = require('human-id')
const { customRandom } = require('nanoid')

const ID_SUFFIX_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const ID_SUFFIX_LENGTH = 12
const words = (list) => list.map((w) => w.toLowerCase()).filter((w) => /^[a-z]+$/.test(w))
const ADJECTIVES = words(rawAdjectives)
const NOUNS = words(rawNouns)

function index(n, random) {
  const bits = 32 - Math.clz32(n - 1)
  const size = Math.ceil(bits / 8)
  const mask = 2 ** bits - 1
  for (;;) {
    const bytes = random(size)
    let value = 0
    for (let i = 0; i < size; i++) value = value * 256 + bytes[i]
    value &= mask
    if (value < n) return value
  }
}

function formatId(prefix, random) {
  const adjective = ADJECTIVES[index(ADJECTIVES.length, random)]
  const noun = NOUNS[index(NOUNS.length, random)]
  const suffix = customRandom(ID_SUFFIX_ALPHABET, ID_SUFFIX_LENGTH, random)()
  return `${prefix}-${adjective}-${noun}-${suffix}`
}

const random = (n) => crypto.randomBytes(n)
const count = Number(process.argv[2] || 100000)
const rounds = Number(process.argv[3] || 7)
formatId('agent', random) // warm-up
for (let i = 0; i < 20000; i++) formatId('agent', random)
const rates = []
let sink = 0
for (let r = 0; r < rounds; r++) {
  const start = process.hrtime.bigint()
  for (let i = 0; i < count; i++) sink += formatId('agent', random).length
  rates.push(count / (Number(process.hrtime.bigint() - start) / 1e9))
}
const sorted = [...rates].sort((a, b) => a - b)
process.stdout.write(JSON.stringify({
  node: process.version, count, rounds, rates: rates.map(Math.round),
  median_per_second: Math.round(sorted[Math.floor(rounds / 2)]), sink: sink > 0,
}) + '\n')
