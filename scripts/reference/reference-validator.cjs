// A validator for every product, written from the ID format's tables alone (not from agentfy.ids), so that
// run-validation-vectors.cjs has something independent to pass against. Dependency-free CommonJS.
//
//   const { isId, byProduct, validatorFor } = require('./reference-validator.cjs')
//   isId(value, prefix)                              // Agentfy's validator
//   byProduct['store-deputy'](value, prefix)
//   validatorFor('bonsite', new Set(['person']))     // a product with a registry of its own
//
// isId(value, prefix) = isCanonicalId(value, prefix) || isLegacyId(value, prefix): the value exactly as
// given (no trimming, case folding, decoding or normalisation), at most 80 characters, split from the right
// into a fixed number of parts so a hyphenated prefix is never ambiguous. prefix undefined means "no
// prefix given": Agentfy then accepts any registered prefix, the other products (whose registries are
// their own) any well-formed one. A prefix argument outside the registry is a programming error (a throw).
'use strict'

const fs = require('fs')
const path = require('path')

const WORDS_FILE = path.join(__dirname, '..', '..', 'src', 'agentfy', 'ids', 'data', 'human-id-4.1.3.json')
const words = JSON.parse(fs.readFileSync(WORDS_FILE, 'utf8'))
const ADJECTIVES = new Set(words.adjectives)
const NOUNS = new Set(words.nouns)
const VERBS = new Set(words.verbs)
const ANY_WORD = null // Shiffty's own dictionary is not published: any [a-z]+ word

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz'
const HEX = '0123456789abcdef'
const LOWER_ALNUM = '0123456789abcdefghijklmnopqrstuvwxyz'
const MAX_LENGTH = 80
const PREFIX_MAX_LENGTH = 32
const PREFIX_SHAPE = /^[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const NIL_UUID = '00000000-0000-0000-0000-000000000000'

// Agentfy's registry: every model name in kebab-case, Organization shortened to org.
const REGISTRY = new Set([
  'agent', 'agent-config-permission', 'agent-link', 'agent-mcp-server', 'api-key', 'cron-job',
  'domain-event', 'episodic-summary', 'kg-entity', 'kg-relation', 'memory-chunk', 'memory-document', 'org',
  'org-credential', 'org-invitation', 'org-member', 'org-policy', 'skill', 'team', 'team-api-key', 'team-member', 'team-task',
  'team-task-attachment', 'user', 'vault-document',
])

const shape = (dictionaries, length, alphabet) => ({ dictionaries, length, alphabet })
const CANONICAL = shape([ADJECTIVES, NOUNS], 12, CROCKFORD)
const THREE_WORDS = shape([ADJECTIVES, NOUNS, VERBS], 20, CROCKFORD)
const BARE_UUID = 'uuid'
const LEGACY = {
  agentfy: [THREE_WORDS, BARE_UUID],
  bonsite: [THREE_WORDS],
  securify: [shape([ADJECTIVES, NOUNS], 12, HEX)],
  shiffty: [shape([ANY_WORD, ANY_WORD], 6, CROCKFORD)],
  'store-deputy': [shape([ADJECTIVES, NOUNS], 12, LOWER_ALNUM)],
}

function matchesShape(value, { dictionaries, length, alphabet }, prefixAllowed) {
  const parts = value.split('-')
  const tail = parts.splice(parts.length - dictionaries.length - 1)
  if (parts.length === 0 || tail.length !== dictionaries.length + 1) return false
  if (!prefixAllowed(parts.join('-'))) return false
  for (let i = 0; i < dictionaries.length; i++) {
    const word = tail[i]
    if (dictionaries[i] === ANY_WORD ? !/^[a-z]+$/.test(word) : !dictionaries[i].has(word)) return false
  }
  const suffix = tail[tail.length - 1]
  return suffix.length === length && [...suffix].every((c) => alphabet.includes(c))
}

// The validator of a product. registry: the prefixes it accepts (Agentfy's own by default; for the other
// products any well-formed prefix unless a registry is given, as a product with its own registry would).
function validatorFor(product, registry = product === 'agentfy' ? REGISTRY : undefined) {
  if (!(product in LEGACY)) throw new Error(`unknown product ${JSON.stringify(product)}`)
  const wellFormed = (head) => head.length <= PREFIX_MAX_LENGTH && PREFIX_SHAPE.test(head)
  return function isId(value, prefix) {
    if (prefix !== undefined && (registry ? !registry.has(prefix) : !wellFormed(prefix))) {
      throw new Error(`ID prefix ${JSON.stringify(prefix)} is not registered`)
    }
    if (typeof value !== 'string' || value.length > MAX_LENGTH) return false
    const prefixAllowed = prefix !== undefined ? (head) => head === prefix
      : registry ? (head) => registry.has(head) : wellFormed
    return [CANONICAL, ...LEGACY[product]].some((format) => format === BARE_UUID
      ? UUID.test(value) && value !== NIL_UUID
      : matchesShape(value, format, prefixAllowed))
  }
}

const byProduct = Object.fromEntries(Object.keys(LEGACY).map((product) => [product, validatorFor(product)]))

module.exports = { isId: byProduct.agentfy, byProduct, validatorFor }
