// The TypeScript reference's formatId(prefix, random), rebuilt from its own npm packages: shared by the
// conformance-vector generator (id-vectors.cjs) and the Node mint-rate benchmark (mint-rate.cjs), so both
// draw exactly the same way.
//
// The words are the arrays exported by the real npm human-id@4.1.3 and the suffix is made by the real
// nanoid@3.3.11 customRandom. The draw: an adjective index, then a noun index, each by rejection sampling
// over whole bytes (index below), then the 12-character suffix from customRandom over the same source.
// Loading this module fails loudly when the installed packages are not those versions or the word lists
// are not 200 adjectives and 300 nouns: any other list would make a different, invalid ID.
'use strict'

const { adjectives: rawAdjectives, nouns: rawNouns } = require('human-id')
const { customRandom } = require('nanoid')
const HUMAN_ID_VERSION = require('human-id/package.json').version
const NANOID_VERSION = require('nanoid/package.json').version

const ID_SUFFIX_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const ID_SUFFIX_LENGTH = 12

if (HUMAN_ID_VERSION !== '4.1.3') throw new Error(`expected human-id 4.1.3, found ${HUMAN_ID_VERSION}`)
if (NANOID_VERSION !== '3.3.11') throw new Error(`expected nanoid 3.3.11, found ${NANOID_VERSION}`)

// Dictionaries as the reference loads them: package order, lower-cased, non-[a-z] words dropped.
const words = (list) => list.map((w) => w.toLowerCase()).filter((w) => /^[a-z]+$/.test(w))
const ADJECTIVES = words(rawAdjectives)
const NOUNS = words(rawNouns)
if (ADJECTIVES.length !== 200 || NOUNS.length !== 300) {
  throw new Error(`expected 200 adjectives and 300 nouns, found ${ADJECTIVES.length} and ${NOUNS.length}`)
}

// index(n): the fewest whole bytes holding n - 1, big-endian, masked to its bit length, redrawn while >= n.
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

// random(n) must return n bytes (an array-like of 0-255), as the reference's random source does.
function formatId(prefix, random) {
  const adjective = ADJECTIVES[index(ADJECTIVES.length, random)]
  const noun = NOUNS[index(NOUNS.length, random)]
  const suffix = customRandom(ID_SUFFIX_ALPHABET, ID_SUFFIX_LENGTH, random)()
  return `${prefix}-${adjective}-${noun}-${suffix}`
}

module.exports = {
  ADJECTIVES, NOUNS, ID_SUFFIX_ALPHABET, ID_SUFFIX_LENGTH, HUMAN_ID_VERSION, NANOID_VERSION, index, formatId,
}
